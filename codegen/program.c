/* codegen/program.c: the compiled program as data, and kernel packs.
 *
 * Everything a runtime needs to launch what cg_compile produced, with no
 * LLVM: the target list, the launch rules and their extent expressions,
 * and the kernel pack, a line-based text file holding the PTX and the
 * metadata, so that compiling and running can happen on different machines
 * (the GPU machines have no LLVM). This file must never include LLVM.
 *
 * A pack reads:
 *
 *   gop-pack 1
 *   op u_mul_e_sum
 *   target sm_90
 *   index 64              (only in a pack of 64-bit indices)
 *   times 1.250 9.875 4.500
 *   sym 0 F
 *   tensor 0 X in src f32 = $0
 *   tensor 2 Y out dst f32 += $0
 *   kernel u_mul_e_sum_s0 0 256 3
 *   param tensor 0
 *   param in_ptr
 *   param sym 0
 *   launch extent warp 8 nv
 *   ptx 5120
 *   <5120 bytes of PTX>
 *   ir 312
 *   <312 bytes of IR text>
 *   sum 9f3c0e1a77b2d4c5
 *   end
 *
 * `sum` is the 64-bit FNV-1a of every byte before its line: a pack whose
 * bytes changed after it was written (a disk or copy fault, an edit, a
 * partial write by a tool that bypassed the rename) is refused rather than
 * loaded, since a flipped byte in the PTX block could still parse. Packs
 * written before there was a `sum` line read as they always did.
 *
 * `kernel NAME STAGE THREADS NPARAMS` (a stage over neighbour groups adds
 * `G DISTANCE THRESHOLD SHARED_TENSOR`, and `CLASSES` when an interleaved
 * table has more than two) is followed by its NPARAMS `param`
 * lines and one `launch` line (`one`, `fill BIND PER_BLOCK`, or `extent
 * BIND PER_BLOCK TOKENS...` with the extent in postfix: integers, `$N` for
 * symbol N, `nv`, `ne`, `+ - * / %`). Tensor dims are integers or `$N`.
 * The kernel line may end in `occupancy N` (an @occupancy) and then
 * `waits` (the kernel starts with griddepcontrol.wait: CgKernel.waits).
 */
#define _GNU_SOURCE /* open_memstream, strtok_r, memmem */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "codegen.h"

/* ---- targets ---- */

const char *const cg_targets[] = {"sm_80", "sm_86", "sm_89", "sm_90", NULL};

bool cg_target_known(const char *target) {
  if (!target) return false;
  for (int i = 0; cg_targets[i]; i++)
    if (strcmp(cg_targets[i], target) == 0) return true;
  return false;
}

int cg_target_check(const char *target, Diag *d) {
  if (cg_target_known(target)) return 0;
  char list[128] = "";
  for (int i = 0; cg_targets[i]; i++) {
    if (i) strcat(list, ", ");
    strcat(list, cg_targets[i]);
  }
  ir_error(d, (Loc){0}, "unknown target %s: gop targets %s",
           target ? target : "(none)", list);
  return -1;
}

/* ---- parameters and extents ---- */

#define NAME2(k, name, ...) name,
static const char *const param_names[] = {CG_PARAM_LIST(NAME2)};
static const char *const tok_names[] = {CG_TOK_LIST(NAME2)};
#undef NAME2

const char *cg_param_name(CgParamKind k) { return param_names[k]; }

int cg_param_bytes(CgParamKind k) {
  switch (k) {
  case CG_PARAM_TENSOR: case CG_PARAM_SRC: case CG_PARAM_DST:
  case CG_PARAM_IN_PTR: case CG_PARAM_IN_EID: case CG_PARAM_IN_SRC:
  case CG_PARAM_OUT_PTR: case CG_PARAM_OUT_EID: case CG_PARAM_OUT_DST:
  case CG_PARAM_GRP_DST: case CG_PARAM_GRP_FIRST: case CG_PARAM_GRP_END:
  case CG_PARAM_GRP_VPTR: case CG_PARAM_GRP_VROW: case CG_PARAM_GRP_UNOWNED:
  case CG_PARAM_GRP_OWN: case CG_PARAM_PAIR_SRC: case CG_PARAM_PAIR_MASK:
  case CG_PARAM_PAIR_POS:
    return 8;
  case CG_PARAM_NV: case CG_PARAM_NE: case CG_PARAM_SYM: case CG_PARAM_NGROUPS:
  case CG_PARAM_NUNOWNED:
    return 4;
  case CG_PARAM_COUNT: break;
  }
  unreachable("bad parameter kind");
}

bool cg_param_wide(CgParamKind k, int index_bits) {
  return index_bits == 64 && (k == CG_PARAM_IN_PTR || k == CG_PARAM_IN_EID ||
                              k == CG_PARAM_OUT_PTR || k == CG_PARAM_OUT_EID ||
                              k == CG_PARAM_GRP_FIRST || k == CG_PARAM_GRP_END ||
                              k == CG_PARAM_GRP_VPTR || k == CG_PARAM_GRP_VROW ||
                              k == CG_PARAM_PAIR_POS);
}

int cg_index_bits_needed(int64_t nv, int64_t ne) {
  (void)nv; /* vertex ids are int32 whatever the width (graph/graph.h) */
  return ne > CG_INDEX32_MAX_EDGES ? 64 : 32;
}

int cg_program_index_bits(const CgProgram *p) { return p->index_bits == 64 ? 64 : 32; }

int cg_expr_eval(const CgExpr *e, int64_t nv, int64_t ne, const int64_t *syms,
                 int nsyms, int64_t *out) {
  int64_t stack[CG_EXPR_MAX];
  int sp = 0;
  if (e->n < 1 || e->n > CG_EXPR_MAX) return -1;
  for (int i = 0; i < e->n; i++) {
    CgTokKind k = e->tok[i].kind;
    int64_t v = e->tok[i].value;
    switch (k) {
    case CG_TOK_CONST: stack[sp++] = v; continue;
    case CG_TOK_SYM:
      if (v < 0 || v >= nsyms) return -1;
      stack[sp++] = syms[v];
      continue;
    case CG_TOK_NV: stack[sp++] = nv; continue;
    case CG_TOK_NE: stack[sp++] = ne; continue;
    case CG_TOK_ADD: case CG_TOK_SUB: case CG_TOK_MUL: case CG_TOK_DIV:
    case CG_TOK_MOD: break;
    case CG_TOK_COUNT: return -1;
    }
    if (sp < 2) return -1;
    int64_t a = stack[sp - 2], b = stack[sp - 1], r = 0;
    sp -= 2;
    switch (k) {
    case CG_TOK_ADD:
      if (__builtin_add_overflow(a, b, &r)) return -1;
      break;
    case CG_TOK_SUB:
      if (__builtin_sub_overflow(a, b, &r)) return -1;
      break;
    case CG_TOK_MUL:
      if (__builtin_mul_overflow(a, b, &r)) return -1;
      break;
    case CG_TOK_DIV:
      if (b == 0 || (a == INT64_MIN && b == -1)) return -1;
      r = a / b;
      break;
    case CG_TOK_MOD:
      if (b == 0 || (a == INT64_MIN && b == -1)) return -1;
      r = a % b;
      break;
    case CG_TOK_CONST: case CG_TOK_SYM: case CG_TOK_NV: case CG_TOK_NE:
    case CG_TOK_COUNT:
      unreachable("operand token as operator");
    }
    stack[sp++] = r;
  }
  if (sp != 1) return -1;
  *out = stack[0];
  return 0;
}

int cg_launch_blocks(const CgKernel *k, int64_t nv, int64_t ne,
                     const int64_t *syms, int nsyms, int64_t fill,
                     int64_t *blocks, Diag *d) {
  switch (k->launch.kind) {
  case CG_LAUNCH_ONE: *blocks = 1; return 0;
  case CG_LAUNCH_FILL: *blocks = fill > 0 ? fill : 1; return 0;
  case CG_LAUNCH_EXTENT: break;
  }
  int64_t n;
  if (cg_expr_eval(&k->launch.extent, nv, ne, syms, nsyms, &n) != 0) {
    ir_error(d, (Loc){0},
             "kernel %s: cannot evaluate the extent of its launch (an "
             "unbound symbol, a division by zero or an overflow)",
             k->name);
    return -1;
  }
  int64_t per = k->launch.per_block > 0 ? k->launch.per_block : 1;
  *blocks = n <= 0 ? 1 : (n - 1) / per + 1;
  return 0;
}

/* ---- freeing ---- */

void cg_program_free(CgProgram *p) {
  free(p->op);
  free(p->target);
  free(p->ptx);
  for (int i = 0; i < p->nkernels; i++) {
    free(p->kernels[i].name);
    free(p->kernels[i].params);
  }
  free(p->kernels);
  for (int i = 0; i < p->nsyms; i++) free(p->syms[i]);
  free(p->syms);
  for (int i = 0; i < p->ntensors; i++) free(p->tensors[i].name);
  free(p->tensors);
  free(p->ir);
  memset(p, 0, sizeof *p);
}

/* ---- writing ---- */

static void write_expr(FILE *f, const CgExpr *e) {
  for (int i = 0; i < e->n; i++) {
    switch (e->tok[i].kind) {
    case CG_TOK_CONST: fprintf(f, " %" PRId64, e->tok[i].value); break;
    case CG_TOK_SYM: fprintf(f, " $%" PRId64, e->tok[i].value); break;
    case CG_TOK_NV: case CG_TOK_NE: case CG_TOK_ADD: case CG_TOK_SUB:
    case CG_TOK_MUL: case CG_TOK_DIV: case CG_TOK_MOD:
      fprintf(f, " %s", tok_names[e->tok[i].kind]);
      break;
    case CG_TOK_COUNT: unreachable("bad token");
    }
  }
}

static void write_pack(FILE *f, const CgProgram *p) {
  fprintf(f, "gop-pack 1\n");
  fprintf(f, "op %s\n", p->op);
  fprintf(f, "target %s\n", p->target);
  /* absent: 32-bit indices (packs written before there were two) */
  if (cg_program_index_bits(p) == 64) fprintf(f, "index 64\n");
  /* absent: edge ids read through in_eid (packs written before CgLayout) */
  if (p->csr_edges) fprintf(f, "edges csr\n");
  /* absent: the graph as given (packs written before transpose()) */
  if (p->transposed) fprintf(f, "graph reversed\n");
  fprintf(f, "times %.3f %.3f %.3f\n", p->times.build_ms, p->times.opt_ms,
          p->times.emit_ms);
  for (int i = 0; i < p->nsyms; i++) fprintf(f, "sym %d %s\n", i, p->syms[i]);
  for (int i = 0; i < p->ntensors; i++) {
    const CgTensorInfo *t = &p->tensors[i];
    const char *role = t->role == IR_ROLE_IN    ? "in"
                       : t->role == IR_ROLE_OUT ? "out"
                                                : "temp";
    fprintf(f, "tensor %d %s %s %s", i, t->name, role, ir_domain_name(t->domain));
    /* rows of a group table (passes/segment.c): `groups(G)`, one word */
    if (t->domain == IR_DOM_GROUPS) fprintf(f, "(%d)", t->group);
    fprintf(f, " %s %s", ir_dtype_name(t->dtype), ir_red_name(t->red));
    for (int j = 0; j < t->ndims; j++) {
      if (t->sym_id[j] >= 0) fprintf(f, " $%d", t->sym_id[j]);
      else fprintf(f, " %" PRId64, t->dims[j].value);
    }
    if (t->staged) fputs(" shared", f); /* promote(X, shared) */
    if (t->filled) fputs(" filled", f); /* absent in packs written before */
    fputc('\n', f);
  }
  for (int i = 0; i < p->nkernels; i++) {
    const CgKernel *k = &p->kernels[i];
    fprintf(f, "kernel %s %d %d %d", k->name, k->stage, k->threads, k->nparams);
    /* a stage over neighbour groups: its table's G, distance, threshold,
     * and the tensor it accumulates in shared memory (-1: none); then the
     * classes when not the two that an interleaved table has by default,
     * so that packs of two classes read as they always did */
    if (k->group)
      fprintf(f, " %d %d %d %d", k->group, k->group_ilv, k->group_thr,
              k->shared_tensor);
    if (k->group && k->group_cls > 2) fprintf(f, " %d", k->group_cls);
    /* the table is the panel table of (G, P) (passes/panel.c); absent in
     * packs written before */
    if (k->group && k->group_panel) fprintf(f, " panel %d", k->group_panel);
    /* an @occupancy(N): the runtime keeps its floor where it spills
     * (runtime/module.c); absent in packs written before */
    if (k->occ > 0) fprintf(f, " occupancy %d", k->occ);
    /* it starts with griddepcontrol.wait (CgKernel.waits); absent in packs
     * written before, whose kernels are launched plainly */
    if (k->waits) fputs(" waits", f);
    fputc('\n', f);
    for (int j = 0; j < k->nparams; j++) {
      fprintf(f, "param %s", cg_param_name(k->params[j].kind));
      if (k->params[j].kind == CG_PARAM_TENSOR ||
          k->params[j].kind == CG_PARAM_SYM)
        fprintf(f, " %d", k->params[j].id);
      fputc('\n', f);
    }
    switch (k->launch.kind) {
    case CG_LAUNCH_ONE: fprintf(f, "launch one\n"); break;
    case CG_LAUNCH_FILL:
      fprintf(f, "launch fill %s %d\n", ir_bind_name(k->launch.bind),
              k->launch.per_block);
      break;
    case CG_LAUNCH_EXTENT:
      fprintf(f, "launch extent %s %d", ir_bind_name(k->launch.bind),
              k->launch.per_block);
      write_expr(f, &k->launch.extent);
      fputc('\n', f);
      break;
    }
  }
  fprintf(f, "ptx %zu\n", p->ptx_len);
  fwrite(p->ptx, 1, p->ptx_len, f);
  fputc('\n', f);
  if (p->ir) {
    size_t n = strlen(p->ir);
    fprintf(f, "ir %zu\n", n);
    fwrite(p->ir, 1, n, f);
    fputc('\n', f);
  }
  fprintf(f, "end\n");
}

/* 64-bit FNV-1a, as runtime/'s rt_fnv1a64 (codegen must not use runtime/). */
static uint64_t pack_sum(const char *data, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)data[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

/* The pack is built in memory first so that its `sum` line can cover every
 * byte before it; `end` follows the sum. */
static void write_pack_to(FILE *f, const void *p) {
  char *buf = NULL;
  size_t n = 0;
  FILE *m = open_memstream(&buf, &n);
  if (!m) {
    fputs("out of memory\n", f); /* an unreadable pack; ferror is not set */
    return;
  }
  write_pack(m, p);
  if (fclose(m) != 0 || !buf || n < 4) {
    free(buf);
    return;
  }
  n -= 4; /* "end\n" */
  fwrite(buf, 1, n, f);
  fprintf(f, "sum %016" PRIx64 "\nend\n", pack_sum(buf, n));
  free(buf);
}

int cg_pack_write(const CgProgram *p, const char *path, Diag *d) {
  Loc at = {path, 0, 0};
  if (!p->ptx || !p->op || !p->target) {
    ir_error(d, at, "cannot write a kernel pack of an empty program");
    return -1;
  }
  return ir_write_file(path, "the kernel pack", write_pack_to, p, d);
}

/* ---- reading ---- */

typedef struct PackReader {
  const char *path;
  const char *text, *end; /* the whole file */
  const char *p;          /* the next line */
  int line;               /* of the line just read */
  char *words[CG_EXPR_MAX + 8];
  int nwords;
  char buf[4096];
  Diag *d;
} PackReader;

static int fail(PackReader *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int fail(PackReader *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ir_verror(r->d, "error", (Loc){r->path, r->line, 0}, fmt, ap);
  va_end(ap);
  return -1;
}

/* Reads the next line and splits it into words; false at end of file. */
static int next_line(PackReader *r) {
  if (r->p >= r->end) {
    r->nwords = 0;
    return fail(r, "unexpected end of file (the pack is truncated)");
  }
  const char *nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
  const char *stop = nl ? nl : r->end;
  size_t n = (size_t)(stop - r->p);
  r->line++;
  if (n >= sizeof r->buf) return fail(r, "line too long");
  memcpy(r->buf, r->p, n);
  r->buf[n] = 0;
  if (memchr(r->p, 0, n)) return fail(r, "a NUL byte in a text line");
  r->p = nl ? nl + 1 : r->end;
  r->nwords = 0;
  char *save = NULL; /* strtok_r: packs are read from several threads */
  for (char *s = strtok_r(r->buf, " \t\r", &save); s;
       s = strtok_r(NULL, " \t\r", &save)) {
    if (r->nwords == (int)(sizeof r->words / sizeof r->words[0]))
      return fail(r, "too many words on a line");
    r->words[r->nwords++] = s;
  }
  return 0;
}

static int want_words(PackReader *r, int n, const char *form) {
  if (r->nwords != n) return fail(r, "expected `%s`", form);
  return 0;
}

/* A line `WORD VALUE` that sets *flag (`usage` is "WORD VALUE", VALUE the
 * one value known, `what` names it in errors): at most once. 0 or -1. */
static int flag_line(PackReader *r, const char *usage, const char *what, bool *flag) {
  const char *value = strchr(usage, ' ') + 1;
  if (want_words(r, 2, usage)) return -1;
  if (*flag) return fail(r, "a second `%s` line", r->words[0]);
  if (strcmp(r->words[1], value) != 0)
    return fail(r, "unknown %s %s (%s)", what, r->words[1], value);
  *flag = true;
  return 0;
}

static int parse_int(PackReader *r, const char *s, int64_t lo, int64_t hi,
                     const char *what, int64_t *out) {
  char *end;
  *out = 0; /* set on every path, so callers never read garbage */
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (!*s || *end || errno || v < lo || v > hi)
    return fail(r, "bad %s '%s'", what, s);
  *out = v;
  return 0;
}

static int parse_double(PackReader *r, const char *s, double *out) {
  char *end;
  *out = strtod(s, &end);
  if (!*s || *end) return fail(r, "bad time '%s'", s);
  return 0;
}

static char *dup_word(const char *s) {
  char *c = strdup(s);
  if (!c) {
    fprintf(stderr, "gop: out of memory\n");
    abort();
  }
  return c;
}

static void *zalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) {
    fprintf(stderr, "gop: out of memory\n");
    abort();
  }
  return p;
}

/* A counted block: `WORD N` then N bytes and a newline. */
static int read_block(PackReader *r, char **out, size_t *len) {
  int64_t n;
  if (r->nwords != 2)
    return fail(r, "expected `%s BYTES`", r->words[0]);
  if (parse_int(r, r->words[1], 0, INT64_MAX, "byte count", &n)) return -1;
  if (*out) return fail(r, "a second `%s` block", r->words[0]);
  if ((int64_t)(r->end - r->p) <= n) /* n + 1 could overflow */
    return fail(r, "the %s block is truncated: %" PRId64
                   " bytes announced, %td left",
                r->words[0], n, r->end - r->p);
  if (memchr(r->p, 0, (size_t)n))
    return fail(r, "a NUL byte in the %s block", r->words[0]);
  if (r->p[n] != '\n')
    return fail(r, "the %s block is not followed by a newline",
                r->words[0]);
  *out = malloc((size_t)n + 1);
  if (!*out) return fail(r, "out of memory");
  memcpy(*out, r->p, (size_t)n);
  (*out)[n] = 0;
  *len = (size_t)n;
  for (const char *q = r->p; q < r->p + n; q++)
    if (*q == '\n') r->line++;
  r->p += n + 1;
  r->line++; /* the newline after the block */
  return 0;
}

static int parse_bind(PackReader *r, const char *s, IrBind *out) {
  int b = ir_bind_lookup(s);
  if (b != IR_BIND_BLOCK && b != IR_BIND_WARP && b != IR_BIND_THREAD)
    return fail(r, "bad launch binding '%s' (block, warp or thread)", s);
  *out = (IrBind)b;
  return 0;
}

static int parse_launch(PackReader *r, CgLaunch *l, int nsyms) {
  if (r->nwords < 2 || strcmp(r->words[0], "launch") != 0)
    return fail(r, "expected `launch one|fill|extent ...`");
  const char *kind = r->words[1];
  int64_t per;
  if (strcmp(kind, "one") == 0) {
    if (want_words(r, 2, "launch one")) return -1;
    l->kind = CG_LAUNCH_ONE;
    l->per_block = 1;
    return 0;
  }
  bool fill = strcmp(kind, "fill") == 0;
  if (!fill && strcmp(kind, "extent") != 0)
    return fail(r, "unknown launch rule '%s'", kind);
  if (fill && want_words(r, 4, "launch fill BIND PER_BLOCK")) return -1;
  if (!fill && r->nwords < 5)
    return fail(r, "expected `launch extent BIND PER_BLOCK TOKENS...`");
  if (parse_bind(r, r->words[2], &l->bind)) return -1;
  if (parse_int(r, r->words[3], 1, 1024, "workers per block", &per))
    return -1;
  l->per_block = (int)per;
  l->kind = fill ? CG_LAUNCH_FILL : CG_LAUNCH_EXTENT;
  if (fill) return 0;
  int depth = 0;
  for (int i = 4; i < r->nwords; i++) {
    const char *w = r->words[i];
    if (l->extent.n == CG_EXPR_MAX) return fail(r, "extent too long");
    CgTokKind k = CG_TOK_COUNT;
    int64_t v = 0;
    if (w[0] == '$') {
      if (parse_int(r, w + 1, 0, nsyms - 1, "symbol", &v)) return -1;
      k = CG_TOK_SYM;
    } else if ((w[0] >= '0' && w[0] <= '9') || (w[0] == '-' && w[1])) {
      if (parse_int(r, w, INT64_MIN, INT64_MAX, "integer", &v)) return -1;
      k = CG_TOK_CONST;
    } else {
      for (int t = CG_TOK_NV; t < CG_TOK_COUNT; t++)
        if (strcmp(w, tok_names[t]) == 0) k = (CgTokKind)t;
      if (k == CG_TOK_COUNT)
        return fail(r, "bad extent token '%s'", w);
    }
    depth += (k <= CG_TOK_NE) ? 1 : -1;
    if (depth < 1) return fail(r, "extent: operator '%s' lacks operands", w);
    l->extent.tok[l->extent.n].kind = k;
    l->extent.tok[l->extent.n].value = v;
    l->extent.n++;
  }
  if (depth != 1) return fail(r, "extent: operands left without operator");
  return 0;
}

static int parse_kernel(PackReader *r, CgProgram *p, CgKernel *k) {
  int64_t stage, threads, nparams, grp[4] = {0, 0, 0, -1}, cls = 0, occ = 0;
  k->waits = r->nwords >= 6 && strcmp(r->words[r->nwords - 1], "waits") == 0;
  if (k->waits) r->nwords--;
  if (r->nwords >= 7 && strcmp(r->words[r->nwords - 2], "occupancy") == 0) {
    if (parse_int(r, r->words[r->nwords - 1], 32, 1 << 16, "occupancy", &occ)) return -1;
    r->nwords -= 2;
  }
  k->occ = (int)occ;
  int64_t panel = 0;
  if (r->nwords >= 11 && strcmp(r->words[r->nwords - 2], "panel") == 0) {
    if (parse_int(r, r->words[r->nwords - 1], IR_PANEL_MIN, IR_PANEL_MAX,
                  "destinations per panel", &panel))
      return -1;
    r->nwords -= 2;
  }
  k->group_panel = (int)panel;
  if (r->nwords != 9 && r->nwords != 10 &&
      want_words(r, 5, "kernel NAME STAGE THREADS NPARAMS [GROUP DISTANCE "
                 "THRESHOLD SHARED_TENSOR [CLASSES] [panel P]] [occupancy N] [waits]"))
    return -1;
  if (r->nwords >= 9 &&
      (parse_int(r, r->words[5], 1, 1 << 20, "group size", &grp[0]) ||
       parse_int(r, r->words[6], 0, 1 << 20, "interleaving distance", &grp[1]) ||
       parse_int(r, r->words[7], 0, INT32_MAX, "degree threshold", &grp[2]) ||
       parse_int(r, r->words[8], -1, p->ntensors - 1, "shared tensor", &grp[3])))
    return -1;
  /* classes: given when more than two, which needs an interleaved table
   * with no degree threshold (passes/interleave.c) */
  if (r->nwords == 10 &&
      (parse_int(r, r->words[9], 3, IR_MAX_CLASSES, "classes", &cls) ||
       (grp[1] == 0 && fail(r, "%" PRId64 " classes of a table that is not "
                            "interleaved", cls)) ||
       (grp[2] != 0 && fail(r, "%" PRId64 " classes with a degree threshold; "
                            "a threshold splits two", cls))))
    return -1;
  k->group = (int)grp[0];
  k->group_ilv = (int)grp[1];
  k->group_cls = grp[1] ? (cls ? (int)cls : 2) : 0;
  k->group_thr = (int)grp[2];
  k->shared_tensor = (int)grp[3];
  if (parse_int(r, r->words[2], 0, INT32_MAX, "stage", &stage) ||
      parse_int(r, r->words[3], 1, 1024, "threads per block", &threads) ||
      parse_int(r, r->words[4], 0, 1024, "parameter count", &nparams))
    return -1;
  if (threads % 32 != 0)
    return fail(r, "threads per block %" PRId64 " is not a multiple of 32",
                threads);
  k->name = dup_word(r->words[1]);
  k->stage = (int)stage;
  k->threads = (int)threads;
  k->params = zalloc((size_t)nparams, sizeof *k->params);
  for (int i = 0; i < nparams; i++) {
    if (next_line(r)) return -1;
    if (r->nwords < 2 || strcmp(r->words[0], "param") != 0)
      return fail(r, "expected `param KIND [ID]` (%d of %" PRId64 ")", i + 1,
                  nparams);
    int kind = -1;
    for (int j = 0; j < CG_PARAM_COUNT; j++)
      if (strcmp(r->words[1], param_names[j]) == 0) kind = j;
    if (kind < 0) return fail(r, "unknown parameter kind '%s'", r->words[1]);
    CgParam *prm = &k->params[i];
    prm->kind = (CgParamKind)kind;
    k->nparams = i + 1;
    if (kind == CG_PARAM_TENSOR || kind == CG_PARAM_SYM) {
      int64_t id;
      int n = kind == CG_PARAM_TENSOR ? p->ntensors : p->nsyms;
      if (want_words(r, 3, "param tensor|sym ID")) return -1;
      if (parse_int(r, r->words[2], 0, n - 1,
                    kind == CG_PARAM_TENSOR ? "tensor id" : "symbol id", &id))
        return -1;
      prm->id = (int)id;
    } else if (want_words(r, 2, "param KIND")) {
      return -1;
    }
  }
  /* the panel table's arrays are bound for a kernel that names it (`panel
   * P`), and a panel kernel reads its pairs or its split panels' list:
   * anything else would run a kernel over the other table's rows */
  bool pairs = false, list = false;
  for (int i = 0; i < k->nparams; i++) {
    CgParamKind pk = k->params[i].kind;
    pairs |= pk == CG_PARAM_GRP_OWN || pk == CG_PARAM_PAIR_SRC || pk == CG_PARAM_PAIR_MASK ||
             pk == CG_PARAM_PAIR_POS;
    list |= pk == CG_PARAM_NUNOWNED;
  }
  if (pairs && !k->group_panel)
    return fail(r, "kernel %s reads a panel table's pairs but names no `panel P`", k->name);
  if (k->group_panel && !pairs && !list)
    return fail(r, "kernel %s names `panel %d` but reads neither pairs nor the split "
                "panels' list", k->name, k->group_panel);
  if (next_line(r)) return -1;
  return parse_launch(r, &k->launch, p->nsyms);
}

static int parse_tensor(PackReader *r, CgProgram *p) {
  /* a tensor the op fills itself ends with the word `filled`, a staged
   * input (promote(X, shared)) with `shared` */
  bool filled = r->nwords > 7 && strcmp(r->words[r->nwords - 1], "filled") == 0;
  if (filled) r->nwords--;
  bool staged = r->nwords > 7 && strcmp(r->words[r->nwords - 1], "shared") == 0;
  if (staged) r->nwords--;
  if (r->nwords < 7 || r->nwords > 7 + IR_MAX_DIMS)
    return fail(r, "expected `tensor ID NAME ROLE DOMAIN DTYPE RED DIMS... "
                "[shared] [filled]`");
  int64_t id;
  if (parse_int(r, r->words[1], 0, INT32_MAX, "tensor id", &id)) return -1;
  if (id != p->ntensors)
    return fail(r, "tensor %" PRId64 " out of order (expected %d)", id,
                p->ntensors);
  if (p->nkernels) return fail(r, "tensors must come before kernels");
  CgTensorInfo t = {0};
  const char *role = r->words[3];
  if (strcmp(role, "in") == 0) t.role = IR_ROLE_IN;
  else if (strcmp(role, "out") == 0) t.role = IR_ROLE_OUT;
  else if (strcmp(role, "temp") == 0) t.role = IR_ROLE_TEMP;
  else return fail(r, "bad tensor role '%s' (in, out or temp)", role);
  int dom = -1, dt = ir_dtype_lookup(r->words[5]), red = -1;
  for (int i = 0; i < IR_DOM_COUNT; i++)
    if (strcmp(r->words[4], ir_domain_name((IrDomain)i)) == 0) dom = i;
  /* `groups(G)`: the rows of the graph's group table of size G */
  int64_t group = 0;
  const char *gw = ir_domain_name(IR_DOM_GROUPS);
  size_t gn = strlen(gw);
  if (strncmp(r->words[4], gw, gn) == 0 && r->words[4][gn] == '(') {
    char num[32];
    size_t len = strcspn(r->words[4] + gn + 1, ")");
    if (len == 0 || len >= sizeof num || strcmp(r->words[4] + gn + 1 + len, ")") != 0)
      return fail(r, "bad tensor domain '%s' (groups(G))", r->words[4]);
    memcpy(num, r->words[4] + gn + 1, len);
    num[len] = 0;
    if (parse_int(r, num, 1, 1 << 20, "group size", &group)) return -1;
    dom = IR_DOM_GROUPS;
  } else if (dom == IR_DOM_GROUPS) {
    return fail(r, "tensor domain 'groups' needs its group size: groups(G)");
  }
  for (int i = 0; i < IR_RED_COUNT; i++)
    if (strcmp(r->words[6], ir_red_name((IrRed)i)) == 0) red = i;
  if (dom < 0) return fail(r, "bad tensor domain '%s'", r->words[4]);
  if (dt < 0) return fail(r, "bad dtype '%s'", r->words[5]);
  if (red < 0) return fail(r, "bad reduction '%s'", r->words[6]);
  t.domain = (IrDomain)dom;
  t.group = (int)group;
  t.dtype = (IrDType)dt;
  t.red = (IrRed)red;
  t.staged = staged;
  t.filled = filled;
  if (staged && (t.role != IR_ROLE_IN || t.domain != IR_DOM_DENSE))
    return fail(r, "tensor '%s' is staged in shared memory but is not a dense "
                "input", r->words[2]);
  if (filled && (t.role == IR_ROLE_IN || t.red != IR_RED_ASSIGN))
    return fail(r, "tensor '%s' is marked filled (the op writes its start values) but "
                "is %s", r->words[2], t.role == IR_ROLE_IN ? "an input" : "reduced into "
                "from a start value the runtime gives (its reduction is not assign)");
  t.ndims = r->nwords - 7;
  for (int j = 0; j < t.ndims; j++) {
    const char *w = r->words[7 + j];
    int64_t v;
    t.sym_id[j] = -1;
    if (w[0] == '$') {
      if (parse_int(r, w + 1, 0, p->nsyms - 1, "symbol", &v)) return -1;
      t.sym_id[j] = (int)v;
    } else {
      if (parse_int(r, w, 0, INT32_MAX, "dimension", &v)) return -1;
      t.dims[j].value = v;
    }
  }
  for (int j = t.ndims; j < IR_MAX_DIMS; j++) t.sym_id[j] = -1;
  t.name = dup_word(r->words[2]);
  CgTensorInfo *grown =
      realloc(p->tensors, sizeof *grown * (size_t)(p->ntensors + 1));
  if (!grown) {
    free(t.name);
    return fail(r, "out of memory");
  }
  p->tensors = grown;
  p->tensors[p->ntensors++] = t;
  return 0;
}

static int parse_pack(PackReader *r, CgProgram *p) {
  if (r->p >= r->end) {
    r->line = 1;
    return fail(r, "empty file: not a gop kernel pack");
  }
  if (next_line(r)) return -1;
  if (r->nwords < 1 || strcmp(r->words[0], "gop-pack") != 0)
    return fail(r, "not a gop kernel pack (the first line should be "
                   "`gop-pack 1`)");
  if (r->nwords != 2 || strcmp(r->words[1], "1") != 0)
    return fail(r, "unsupported kernel pack version '%s' (this gop reads "
                   "version 1)",
                r->nwords > 1 ? r->words[1] : "");
  size_t ir_len = 0;
  bool summed = false;
  for (;;) {
    if (next_line(r)) return -1;
    if (r->nwords == 0) return fail(r, "empty line");
    const char *w = r->words[0];
    if (summed && strcmp(w, "end") != 0)
      return fail(r, "`%s` after the `sum` line (it must be the last before `end`)", w);
    if (strcmp(w, "end") == 0) {
      if (want_words(r, 1, "end")) return -1;
      break;
    } else if (strcmp(w, "op") == 0) {
      if (want_words(r, 2, "op NAME")) return -1;
      if (p->op) return fail(r, "a second `op` line");
      p->op = dup_word(r->words[1]);
    } else if (strcmp(w, "target") == 0) {
      if (want_words(r, 2, "target SM")) return -1;
      if (p->target) return fail(r, "a second `target` line");
      if (!cg_target_known(r->words[1]))
        return fail(r, "unknown target %s", r->words[1]);
      p->target = dup_word(r->words[1]);
    } else if (strcmp(w, "index") == 0) {
      int64_t bits;
      if (want_words(r, 2, "index 32|64")) return -1;
      if (p->index_bits) return fail(r, "a second `index` line");
      if (parse_int(r, r->words[1], 32, 64, "index width", &bits)) return -1;
      if (bits != 32 && bits != 64)
        return fail(r, "bad index width %" PRId64 " (32 or 64)", bits);
      p->index_bits = (int)bits;
    } else if (strcmp(w, "edges") == 0) {
      if (flag_line(r, "edges csr", "edge layout", &p->csr_edges)) return -1;
    } else if (strcmp(w, "graph") == 0) {
      if (flag_line(r, "graph reversed", "graph form", &p->transposed)) return -1;
    } else if (strcmp(w, "times") == 0) {
      if (want_words(r, 4, "times BUILD_MS OPT_MS EMIT_MS") ||
          parse_double(r, r->words[1], &p->times.build_ms) ||
          parse_double(r, r->words[2], &p->times.opt_ms) ||
          parse_double(r, r->words[3], &p->times.emit_ms))
        return -1;
    } else if (strcmp(w, "sym") == 0) {
      int64_t id;
      if (want_words(r, 3, "sym ID NAME")) return -1;
      if (parse_int(r, r->words[1], 0, INT32_MAX, "symbol id", &id)) return -1;
      if (id != p->nsyms)
        return fail(r, "symbol %" PRId64 " out of order (expected %d)", id,
                    p->nsyms);
      if (p->ntensors || p->nkernels)
        return fail(r, "symbols must come before tensors and kernels");
      char **grown = realloc(p->syms, sizeof *grown * (size_t)(p->nsyms + 1));
      if (!grown) return fail(r, "out of memory");
      p->syms = grown;
      p->syms[p->nsyms++] = dup_word(r->words[2]);
    } else if (strcmp(w, "tensor") == 0) {
      if (parse_tensor(r, p)) return -1;
    } else if (strcmp(w, "kernel") == 0) {
      CgKernel *grown =
          realloc(p->kernels, sizeof *grown * (size_t)(p->nkernels + 1));
      if (!grown) return fail(r, "out of memory");
      p->kernels = grown;
      memset(&p->kernels[p->nkernels], 0, sizeof *grown);
      p->nkernels++;
      if (parse_kernel(r, p, &p->kernels[p->nkernels - 1])) return -1;
    } else if (strcmp(w, "ptx") == 0) {
      if (read_block(r, &p->ptx, &p->ptx_len)) return -1;
    } else if (strcmp(w, "ir") == 0) {
      if (read_block(r, &p->ir, &ir_len)) return -1;
    } else if (strcmp(w, "sum") == 0) {
      if (want_words(r, 2, "sum HEX")) return -1;
      /* the line just read starts after the last newline before r->p */
      const char *line = r->p;
      if (line > r->text && line[-1] == '\n') line--;
      while (line > r->text && line[-1] != '\n') line--;
      char want[17];
      snprintf(want, sizeof want, "%016" PRIx64,
               pack_sum(r->text, (size_t)(line - r->text)));
      if (strcmp(r->words[1], want) != 0)
        return fail(r, "the pack's checksum does not match its contents "
                       "(sum %s, computed %s): the file is damaged",
                    r->words[1], want);
      summed = true;
    } else {
      return fail(r, "unknown line '%s'", w);
    }
  }
  if (r->p < r->end) {
    r->line++;
    return fail(r, "text after `end`");
  }
  if (!p->op) return fail(r, "the pack names no `op`");
  if (!p->target) return fail(r, "the pack names no `target`");
  if (!p->ptx) return fail(r, "the pack holds no `ptx` block");
  if (p->nkernels == 0) return fail(r, "the pack holds no kernel");
  /* a kernel marked `waits` is launched while the kernel before it still
   * runs: its PTX must hold the wait, or it would race with that kernel */
  for (int i = 0; i < p->nkernels; i++) {
    const CgKernel *k = &p->kernels[i];
    size_t len = 0;
    const char *at = k->waits ? cg_kernel_ptx(p, k->name, &len) : NULL;
    static const char wait[] = "griddepcontrol.wait;";
    if (k->waits && (!at || !memmem(at, len, wait, sizeof wait - 1)))
      return fail(r, "kernel %s is marked `waits` but its PTX has no griddepcontrol.wait",
                  k->name);
  }
  return 0;
}

const char *cg_kernel_ptx(const CgProgram *p, const char *name, size_t *len) {
  char entry[160];
  snprintf(entry, sizeof entry, ".entry %s(", name);
  const char *at = p->ptx ? strstr(p->ptx, entry) : NULL;
  if (!at) return NULL;
  const char *end = strstr(at + 1, ".entry ");
  *len = end ? (size_t)(end - at) : strlen(at);
  return at;
}

int cg_pack_read(const char *path, CgProgram *out, Diag *d) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (!f) {
    ir_error(d, (Loc){path, 0, 0}, "cannot read the kernel pack: %s",
             strerror(errno));
    return -1;
  }
  size_t cap = 1 << 16, n = 0, got;
  char *text = malloc(cap);
  int64_t limit = ir_limit(IR_LIMIT_HOST_BYTES);
  while (text && (got = fread(text + n, 1, cap - n, f)) > 0) {
    n += got;
    if ((int64_t)n > limit) { /* a pack is read whole: refuse one too big */
      fclose(f);
      free(text);
      ir_limit_check(IR_LIMIT_HOST_BYTES, (int64_t)n, d, (Loc){path, 0, 0},
                     "the kernel pack is larger than");
      return -1;
    }
    if (n == cap) {
      char *bigger = realloc(text, cap *= 2);
      if (!bigger) free(text);
      text = bigger;
    }
  }
  bool bad = !text || ferror(f);
  fclose(f);
  if (bad) {
    ir_error(d, (Loc){path, 0, 0}, "cannot read the kernel pack: %s",
             text ? "read error" : "out of memory");
    free(text);
    return -1;
  }
  PackReader r = {.path = path, .text = text, .end = text + n, .p = text,
                  .d = d};
  int rc = parse_pack(&r, out);
  free(text);
  if (rc != 0) cg_program_free(out);
  return rc;
}
