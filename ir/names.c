/* ir/names.c: printable names of every IR enum, generated from nodes.def. */
#include <string.h>

#include "ir.h"

#define NAME2(k, name, ...) name,
static const char *kind_names[] = {IR_NODE_LIST(NAME2)};
static const char *dtype_names[] = {IR_DTYPE_LIST(NAME2)};
static const char *domain_names[] = {IR_DOMAIN_LIST(NAME2)};
static const char *loopkind_names[] = {IR_LOOPKIND_LIST(NAME2)};
static const char *bind_names[] = {IR_BIND_LIST(NAME2)};
static const char *red_names[] = {IR_RED_LIST(NAME2)};
static const char *how_names[] = {IR_HOW_LIST(NAME2)};
static const char *binop_names[] = {IR_BINOP_LIST(NAME2)};
static const char *unop_names[] = {IR_UNOP_LIST(NAME2)};
static const char *fn_names[] = {IR_FN_LIST(NAME2)};
static const char *varkind_names[] = {IR_VARKIND_LIST(NAME2)};
#undef NAME2

#define THIRD(k, name, x, ...) x,
static const int dtype_bytes[] = {IR_DTYPE_LIST(THIRD)};
static const int binop_prec[] = {IR_BINOP_LIST(THIRD)};
static const int fn_nargs[] = {IR_FN_LIST(THIRD)};
#undef THIRD
#define FOURTH(k, name, x, y) y,
static const int dtype_float[] = {IR_DTYPE_LIST(FOURTH)};
#undef FOURTH

const char *ir_kind_name(IrKind k) { return kind_names[k]; }
const char *ir_dtype_name(IrDType t) { return dtype_names[t]; }
int ir_dtype_bytes(IrDType t) { return dtype_bytes[t]; }
bool ir_dtype_is_float(IrDType t) { return dtype_float[t]; }
bool ir_dtype_is_16bit(IrDType t) { return t == IR_DT_F16 || t == IR_DT_BF16; }
const char *ir_domain_name(IrDomain d) { return domain_names[d]; }
const char *ir_loopkind_name(IrLoopKind k) { return loopkind_names[k]; }
const char *ir_bind_name(IrBind b) { return bind_names[b]; }
const char *ir_red_name(IrRed r) { return red_names[r]; }
const char *ir_how_name(IrHow h) { return how_names[h]; }
const char *ir_binop_name(IrBinOp op) { return binop_names[op]; }
int ir_binop_prec(IrBinOp op) { return binop_prec[op]; }
const char *ir_unop_name(IrUnOp op) { return unop_names[op]; }
const char *ir_fn_name(IrFn fn) { return fn_names[fn]; }
int ir_fn_nargs(IrFn fn) { return fn_nargs[fn]; }
const char *ir_varkind_name(IrVarKind k) { return varkind_names[k]; }

static int lookup(const char *const *names, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0) return i;
  return -1;
}

int ir_dtype_lookup(const char *name) {
  return lookup(dtype_names, IR_DT_COUNT, name);
}
int ir_fn_lookup(const char *name) { return lookup(fn_names, IR_FN_COUNT, name); }
int ir_bind_lookup(const char *name) {
  return lookup(bind_names, IR_BIND_COUNT, name);
}
