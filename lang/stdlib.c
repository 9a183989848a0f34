/* lang/stdlib.c: access to the embedded standard library.
 *
 * stdlib/embed.cmake turns every stdlib/NAME.gop into one string of the
 * generated stdlib_embed.c (lang_stdlib_files); this file compiles them, all
 * into one module so that a name defined twice across files is caught, and
 * finds which file defines an op (for tools that show its source).
 */
#include <string.h>

#include "lang/lang.h"

IrModule *lang_stdlib(Arena *a, Diag *d) {
  IrModule *m = ir_module_new(a);
  bool ok = true;
  for (const LangStdlibFile *f = lang_stdlib_files; f->name; f++)
    ok &= lang_compile_into(m, d, f->name, f->text, false);
  return ok ? m : NULL;
}

const LangStdlibFile *lang_stdlib_find_op(const char *opname) {
  if (!opname) return NULL;
  const LangStdlibFile *found = NULL;
  for (const LangStdlibFile *f = lang_stdlib_files; f->name && !found; f++) {
    /* Only the syntax is needed to see which ops a file defines. */
    Arena *a = ir_arena_new();
    Diag d;
    ir_diag_init(&d, NULL);
    LangParser ps = {.arena = a, .diag = &d, .file = f->name};
    if (lang_parse(&ps, f->text))
      for (const LangNode *n = ps.defs; n; n = n->next)
        if (n->kind == LANG_OP && strcmp(n->op.name, opname) == 0) found = f;
    ir_diag_free(&d);
    ir_arena_free(a);
  }
  return found;
}
