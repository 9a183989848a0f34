# Turns examples/models/layers.gop into one C source holding its text as
# `const char rt_model_layers_gop[]`, for runtime/model.c. Run by the build
# (see CMakeLists.txt); its output is generated, do not edit.
file(READ ${FILE} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
file(WRITE ${OUT}.tmp
  "/* generated from examples/models/layers.gop by examples/models/embed.cmake: do not edit */\n"
  "const char rt_model_layers_gop[] = {${hex}0x00};\n")
file(RENAME ${OUT}.tmp ${OUT})
