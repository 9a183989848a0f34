# Turns one text file into a C source holding it as `const char SYMBOL[]`
# (NUL-terminated): examples/models/layers.gop for runtime/model.c,
# tune/builtin.model for tune/trees.c. Run by the build (see
# CMakeLists.txt) with -DFILE=... -DSYMBOL=... -DOUT=...; its output is
# generated, do not edit.
file(READ ${FILE} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
file(RELATIVE_PATH name ${CMAKE_CURRENT_LIST_DIR}/.. ${FILE})
file(WRITE ${OUT}.tmp
  "/* generated from ${name} by tools/embed_file.cmake: do not edit */\n"
  "const char ${SYMBOL}[] = {${hex}0x00};\n")
file(RENAME ${OUT}.tmp ${OUT})
