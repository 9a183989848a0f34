/* codegen/loop.c: sequential and bound loops over ranges, vertices, edges.
 *
 * Every loop is emitted in one shape: a guard, then a bottom-tested loop
 *
 *     i = base + id; if (i < end) do { body } while ((i += count) < end)
 *
 * where a sequential loop has id 0 and count 1, and a bound loop is a
 * grid-stride loop with the worker ids of docs/gpu-ir.md:
 *
 *     @block   ctaid.x                      nctaid.x
 *     @warp    (ctaid.x * ntid.x + tid.x) / 32   nctaid.x * ntid.x / 32
 *     @thread  ctaid.x * ntid.x + tid.x      nctaid.x * ntid.x
 *     @lane    tid.x % 32                   32
 *
 * (inside a @block loop, @warp and @thread count within the block: tid.x / 32
 * of ntid.x / 32, tid.x of ntid.x). A @warp loop with @team(T) counts teams
 * of T lanes instead of warps (gtid / T of nthreads / T), and the @lane
 * loops inside it the lanes of the team (tid.x % T of T). Bound loops test `i + count < end`
 * unsigned: i < end <= 2^31 - 1 and count < 2^31, so the sum cannot wrap
 * in 32 bits, while a signed test could overflow near 2^31.
 *
 * Edge loops over in_edges(v) walk k over in_ptr[v] .. in_ptr[v + 1], with
 * the edge id in_eid[k] and src(e) = in_src[k] (out_edges: out_eid[k],
 * out_dst[k]; flat edges: src[e], dst[e]); loads the body does not use are
 * dropped, so a loop that only needs src(e) never takes in_eid.
 *
 * A @prefetch edge loop (passes/prefetch.c) is emitted in two levels:
 *
 *     mask = activemask; n = popc(mask); r = popc(mask & lanes below mine)
 *     for (c = base; c < end; c += n) {          chunks of n edges
 *       k = c + r < end ? c + r : c               my edge of the chunk
 *       eid_l = in_eid[k]; src_l = in_src[k]; w_l = W[eid_l] ...
 *       left = mask
 *       for (j = 0; j < min(n, end - c); j++) {   its edges, in order
 *         s = ctz(left); left &= left - 1         the lane of rank j
 *         e = shfl.sync.idx(mask, eid_l, s); src(e) = shfl(src_l, s) ...
 *         body                                    (W[e] is shfl(w_l, s))
 *       }
 *     }
 *
 * so the lanes that reach the loop together (all 32 for a warp over
 * features; those past a feature tail or a vector entry test are not
 * among them) make one coalesced load per scalar per n edges. The edge
 * list is the same for every lane (the check refuses it otherwise), so
 * each lane's view of the loop is unchanged: same edges, same order.
 * Shuffles the body does not use, and the loads only they used, are
 * dropped. The inner loop carries the @unroll hint.
 *
 * The first bound loop with no bound loop around it sets the kernel's
 * launch rule: its extent and workers per block.
 */
#define GOP_CODEGEN_INTERNAL
#include <string.h>

#include <llvm-c/DebugInfo.h>

#include "codegen.h"

bool cg_extent_expr(const IrNode *e, CgExpr *out) {
  if (!e || out->n >= CG_EXPR_MAX) return false;
  CgTokKind k = CG_TOK_COUNT;
  int64_t value = 0;
  switch (e->kind) {
  case IR_ICONST: k = CG_TOK_CONST; value = e->i; break;
  case IR_SYM: k = CG_TOK_SYM; value = e->sym->id; break;
  case IR_NV: k = CG_TOK_NV; break;
  case IR_NE: k = CG_TOK_NE; break;
  case IR_BIN:
    if (e->type != IR_TY_INT) return false;
    switch (e->bin.op) {
    case IR_OP_ADD: k = CG_TOK_ADD; break;
    case IR_OP_SUB: k = CG_TOK_SUB; break;
    case IR_OP_MUL: k = CG_TOK_MUL; break;
    case IR_OP_DIV: k = CG_TOK_DIV; break;
    case IR_OP_MOD: k = CG_TOK_MOD; break;
    case IR_OP_OR: case IR_OP_AND: case IR_OP_EQ: case IR_OP_NE:
    case IR_OP_LT: case IR_OP_LE: case IR_OP_GT: case IR_OP_GE:
      return false;
    case IR_BINOP_COUNT: unreachable("bad binary operator");
    }
    if (!cg_extent_expr(e->bin.a, out) || !cg_extent_expr(e->bin.b, out))
      return false;
    if (out->n >= CG_EXPR_MAX) return false;
    break;
  case IR_LOOP: case IR_STORE: case IR_LET: case IR_SET: case IR_IF:
  case IR_FCONST: case IR_VAR: case IR_LOAD: case IR_UN: case IR_CALL:
  case IR_SRC: case IR_DST: case IR_INDEG: case IR_OUTDEG: case IR_OWNS:
    return false;
  case IR_NODE_COUNT: unreachable("bad node kind");
  }
  out->tok[out->n].kind = k;
  out->tok[out->n].value = value;
  out->n++;
  return true;
}

/* Refuses bindings that break docs/gpu-ir.md's nesting rules. */
static bool check_binding(CgCtx *cg, const IrNode *l) {
  const char *v = l->loop.var->name;
  switch (l->loop.bind) {
  case IR_BIND_NONE: return true;
  case IR_BIND_BLOCK:
    if (cg->bound_depth == 0) return true;
    cg_error(cg, l->loc, "loop '%s' is bound to @block inside another bound "
             "loop: @block must be the outermost binding", v);
    return false;
  case IR_BIND_WARP:
  case IR_BIND_THREAD:
    if (!cg->in_warp && !cg->in_thread && !cg->in_lane) return true;
    cg_error(cg, l->loc, "loop '%s' is bound to @%s inside a @%s loop: "
             "loops bound to the same worker level do not nest", v,
             ir_bind_name(l->loop.bind),
             cg->in_warp ? "warp" : cg->in_thread ? "thread" : "lane");
    return false;
  case IR_BIND_LANE:
    if (cg->in_warp && !cg->in_lane && !cg->in_thread) return true;
    cg_error(cg, l->loc, "loop '%s' is bound to @lane %s", v,
             cg->in_lane ? "inside another @lane loop"
                         : "outside a @warp loop: a @lane loop must be "
                           "inside a @warp loop");
    return false;
  case IR_BIND_COUNT: break;
  }
  unreachable("bad binding");
}

/* The worker id and count of a binding (sequential: 0 and 1). */
static void worker(CgCtx *cg, IrBind bind, int team, LLVMValueRef *id,
                   LLVMValueRef *count) {
  LLVMBuilderRef b = cg->b;
  switch (bind) {
  case IR_BIND_NONE:
    *id = cg_i32(cg, 0);
    *count = cg_i32(cg, 1);
    return;
  case IR_BIND_BLOCK:
    *id = cg_sreg(cg, "ctaid.x");
    *count = cg_sreg(cg, "nctaid.x");
    return;
  case IR_BIND_LANE: {
    int lanes = cg->team ? cg->team : 32;
    *id = LLVMBuildAnd(b, cg_sreg(cg, "tid.x"), cg_i32(cg, lanes - 1), "lane");
    *count = cg_i32(cg, lanes);
    return;
  }
  case IR_BIND_WARP:
  case IR_BIND_THREAD:
    break;
  case IR_BIND_COUNT: unreachable("bad binding");
  }
  LLVMValueRef tid = cg_sreg(cg, "tid.x"), ntid = cg_sreg(cg, "ntid.x");
  LLVMValueRef gid, gcount;
  if (cg->in_block) {
    gid = tid;
    gcount = ntid;
  } else {
    gid = LLVMBuildNUWAdd(
        b, LLVMBuildNUWMul(b, cg_sreg(cg, "ctaid.x"), ntid, ""), tid, "gtid");
    gcount = LLVMBuildNUWMul(b, cg_sreg(cg, "nctaid.x"), ntid, "nthreads");
  }
  if (bind == IR_BIND_THREAD) {
    *id = gid;
    *count = gcount;
  } else {
    int shift = 5; /* a team of T = 2^k lanes: shift by k */
    while (team && (1 << shift) > team) shift--;
    *id = LLVMBuildLShr(b, gid, cg_i32(cg, shift), team ? "team" : "warp");
    *count = LLVMBuildLShr(b, gcount, cg_i32(cg, shift), team ? "nteams" : "nwarps");
  }
}

/* worker() as indices (t_idx): the ids themselves stay below 2^31 (a grid
 * is capped at a few waves), the loop variables they start may not. */
static void worker_idx(CgCtx *cg, IrBind bind, int team, LLVMValueRef *id,
                       LLVMValueRef *count) {
  worker(cg, bind, team, id, count);
  *id = cg_to_idx(cg, *id);
  *count = cg_to_idx(cg, *count);
}

/* The first bound loop not inside another sets how the grid is sized. */
static void set_launch(CgCtx *cg, const IrNode *l) {
  CgKernel *k = cg->kernel;
  CgLaunch *ln = &k->launch;
  cg->launch_set = true;
  memset(ln, 0, sizeof *ln);
  ln->bind = l->loop.bind;
  ln->per_block = l->loop.bind == IR_BIND_BLOCK  ? 1
                  : l->loop.bind == IR_BIND_WARP ? k->threads / (l->loop.team ? l->loop.team : 32)
                                                 : k->threads;
  ln->kind = CG_LAUNCH_EXTENT;
  switch (l->loop.kind) {
  case IR_LOOP_SRC_V:
  case IR_LOOP_DST_V:
    ln->extent.n = 1;
    ln->extent.tok[0].kind = CG_TOK_NV;
    return;
  case IR_LOOP_EDGES:
    ln->extent.n = 1;
    ln->extent.tok[0].kind = CG_TOK_NE;
    return;
  case IR_LOOP_RANGE:
    if (cg_extent_expr(l->loop.extent, &ln->extent)) return;
    break;
  case IR_LOOP_IN_EDGES:
  case IR_LOOP_OUT_EDGES:
  case IR_LOOP_GROUPS: /* the table's rows: known at launch, not in CgExpr */
  case IR_LOOP_GROUP_EDGES:
  case IR_LOOP_GROUP_ROWS:
  case IR_LOOP_UNOWNED: /* the list's length: known at launch */
  case IR_LOOP_PAIRS:
  case IR_LOOP_PAIR_EDGE:
    break;
  case IR_LOOP_COUNT: unreachable("bad loop kind");
  }
  ln->kind = CG_LAUNCH_FILL;
  memset(&ln->extent, 0, sizeof ln->extent);
}

/* Attaches !llvm.loop with an unroll count to the loop's back edge. */
static void unroll_hint(CgCtx *cg, LLVMValueRef br, int count) {
  LLVMMetadataRef tmp = LLVMTemporaryMDNode(cg->ctx, NULL, 0);
  const char *key = "llvm.loop.unroll.count";
  LLVMMetadataRef opt[2] = {
      LLVMMDStringInContext2(cg->ctx, key, strlen(key)),
      LLVMValueAsMetadata(cg_i32(cg, count)),
  };
  LLVMMetadataRef ops[2] = {tmp, LLVMMDNodeInContext2(cg->ctx, opt, 2)};
  LLVMMetadataRef self = LLVMMDNodeInContext2(cg->ctx, ops, 2);
  LLVMMetadataReplaceAllUsesWith(tmp, self); /* also disposes tmp */
  LLVMSetMetadata(br, cg->md_loop, LLVMMetadataAsValue(cg->ctx, self));
}

/* The id of the in-edge at CSR position `k`: in_eid[k] (a load the caller
 * may drop, so it goes in `eager`), or k itself where the kernel is
 * compiled for a graph whose edge ids are CSR positions (CgLayout). */
static LLVMValueRef in_edge_id(CgCtx *cg, LLVMValueRef k, LLVMValueRef eager[3], int *n,
                               const char *name) {
  if (cg->csr_edges) return cg_to_idx(cg, k);
  return eager[(*n)++] = cg_graph_at(cg, CG_PARAM_IN_EID, k, name);
}

/* What the body of groups loop `l` reads of its row: the CSR range of its
 * edges (a group_edges loop over it), its destination (dst(g), or that
 * loop's edges' dst), the destination's in-degree (in_degree(dst(g))). */
typedef struct GroupUses {
  const IrVar *g;
  bool range, dst, deg, own;
} GroupUses;

static bool is_row(const IrNode *e, const IrVar *g) {
  return e && e->kind == IR_VAR && e->var == g;
}

static bool scan_group_uses(const IrNode *n, void *ctx) {
  GroupUses *u = ctx;
  if (n->kind == IR_LOOP &&
      (n->loop.kind == IR_LOOP_GROUP_EDGES || n->loop.kind == IR_LOOP_PAIRS) &&
      is_row(n->loop.of, u->g))
    u->range = u->dst = true;
  if (n->kind == IR_OWNS && is_row(n->endpoint.e, u->g)) u->own = true;
  if (n->kind == IR_DST && is_row(n->endpoint.e, u->g)) u->dst = true;
  if (n->kind == IR_INDEG && n->endpoint.e->kind == IR_DST &&
      is_row(n->endpoint.e->endpoint.e, u->g))
    u->deg = true;
  return false;
}

/* A group's row read at the top of its groups loop's body, once, rather
 * than where each value is used: the bounds at its group_edges loop (inside
 * a feature loop: once per feature tile), the destination and its in-degree
 * after the edge loop, where a sum's store tests whether the group owns its
 * row. Loaded at the top, they are in flight while the edges are summed;
 * loaded at their uses, the destination and then its in-degree were two
 * more round trips to memory after the sum, on each group's chain of
 * dependent loads. (expr.c subtracts the degree's two offsets where it is
 * used, which LLVM would otherwise hoist back to the top, to wait there.)
 * Measured on an H200 (bench/results/2026-11-30-H200-group-row-loads):
 * spmm_groups 1.00-1.17x; schedules whose registers it raises past a step
 * of occupancy (spmm_tiles, gnnadvisor) 0.95x. Every value is read for a
 * valid row (i < ngroups) and destination. */
static void group_prologue(CgCtx *cg, const IrNode *l, CgVar *v) {
  GroupUses u = {l->loop.var, false, false, false, false};
  ir_any(l->loop.body, scan_group_uses, &u);
  LLVMValueRef i = v->value;
  if (u.range) {
    v->gbeg = cg_graph_at(cg, CG_PARAM_GRP_FIRST, i, "gbeg");
    v->gend = cg_graph_at(cg, CG_PARAM_GRP_END, i, "gend");
  }
  if (u.dst || u.deg) v->dst = cg_graph_at(cg, CG_PARAM_GRP_DST, i, "gdst");
  if (u.own) v->own = cg_graph_at(cg, CG_PARAM_GRP_OWN, i, "gown");
  if (u.deg) {
    LLVMValueRef d1 = LLVMBuildNSWAdd(cg->b, v->dst, cg_idx(cg, 1), "");
    v->deg[0] = cg_graph_at(cg, CG_PARAM_IN_PTR, v->dst, "dbeg");
    v->deg[1] = cg_graph_at(cg, CG_PARAM_IN_PTR, d1, "dend");
  }
}

/* Binds the loop variable for the body, at the top of the body. An edge's
 * id and endpoints are loaded here, once per iteration, rather than where
 * they are used: a use inside a guard could not be hoisted by LLVM (the
 * load is not known to be safe to speculate), so it would be repeated for
 * every feature. Returns the loads made, for the caller to drop unused
 * ones. */
static int bind_var(CgCtx *cg, const IrNode *l, LLVMValueRef i,
                    LLVMValueRef of, CgVar *v, LLVMValueRef eager[3]) {
  int n = 0;
  memset(v, 0, sizeof *v);
  v->bound = true;
  switch (l->loop.kind) {
  case IR_LOOP_RANGE: case IR_LOOP_SRC_V: case IR_LOOP_DST_V:
    v->value = i;
    return 0;
  case IR_LOOP_EDGES:
    v->value = i;
    v->src = eager[n++] = cg_graph_at(cg, CG_PARAM_SRC, i, "src");
    v->dst = eager[n++] = cg_graph_at(cg, CG_PARAM_DST, i, "dst");
    return n;
  case IR_LOOP_IN_EDGES:
    v->value = in_edge_id(cg, i, eager, &n, l->loop.var->name);
    v->src = eager[n++] = cg_graph_at(cg, CG_PARAM_IN_SRC, i, "src");
    v->dst = of;
    return n;
  case IR_LOOP_OUT_EDGES:
    v->value = eager[n++] = cg_graph_at(cg, CG_PARAM_OUT_EID, i, l->loop.var->name);
    v->src = of;
    v->dst = eager[n++] = cg_graph_at(cg, CG_PARAM_OUT_DST, i, "dst");
    return n;
  case IR_LOOP_GROUPS:
    v->value = i;
    v->group_row = true;
    group_prologue(cg, l, v);
    return 0;
  case IR_LOOP_GROUP_EDGES: { /* `of` is the group's row */
    const CgVar *g = cg_group_row(cg, l->loop.of);
    v->value = in_edge_id(cg, i, eager, &n, l->loop.var->name);
    v->src = eager[n++] = cg_graph_at(cg, CG_PARAM_IN_SRC, i, "src");
    if (g && g->dst) v->dst = g->dst;
    else v->dst = eager[n++] = cg_graph_at(cg, CG_PARAM_GRP_DST, of, "dst");
    return n;
  }
  case IR_LOOP_GROUP_ROWS: /* passes/segment.c: k walks vptr[v] .. vptr[v+1] */
    v->value = cg_graph_at(cg, CG_PARAM_GRP_VROW, i, l->loop.var->name);
    return 0;
  case IR_LOOP_PAIRS: { /* passes/panel.c: pair i of a panel row */
    const CgVar *g = cg_group_row(cg, l->loop.of);
    v->value = i;
    v->src = eager[n++] = cg_graph_at(cg, CG_PARAM_PAIR_SRC, i, "psrc");
    v->mask = cg_graph_at(cg, CG_PARAM_PAIR_MASK, i, "pmask");
    v->dst = g && g->dst ? g->dst : cg_graph_at(cg, CG_PARAM_GRP_DST, of, "pdst");
    v->panel = cg->kernel->group_panel;
    return n;
  }
  case IR_LOOP_PAIR_EDGE: { /* the edge in slot `slot` of pair `of` */
    const CgVar *q = &cg->vars[l->loop.of->var->id];
    LLVMValueRef k = LLVMBuildNSWAdd(cg->b, LLVMBuildNSWMul(cg->b, of, cg_idx(cg, q->panel), ""),
                                     cg_idx(cg, l->loop.slot), "");
    LLVMValueRef pos = eager[n++] = cg_graph_at(cg, CG_PARAM_PAIR_POS, k, "ppos");
    v->value = in_edge_id(cg, pos, eager, &n, l->loop.var->name);
    v->src = q->src;
    v->dst = LLVMBuildNSWAdd(cg->b, q->dst, cg_idx(cg, l->loop.slot), "dst");
    return n;
  }
  case IR_LOOP_UNOWNED: /* the i-th destination no group owns */
    v->value = cg_graph_at(cg, CG_PARAM_GRP_UNOWNED, i, l->loop.var->name);
    return 0;
  case IR_LOOP_COUNT: break;
  }
  unreachable("bad loop kind");
}

/* The edge tensors the body of `l` reads at exactly [e], not written by
 * this kernel (passes/prefetch.c refuses anything else). */
static bool collect_pf(const IrNode *n, void *ctx) {
  void **c = ctx;
  CgCtx *cg = c[0];
  const IrNode *l = c[1];
  int *count = c[2];
  const IrTensor **ts = c[3];
  if (n->kind != IR_LOAD || n->acc.tensor->domain != IR_DOM_EDGE || n->acc.nidx != 1 ||
      n->acc.idx[0]->kind != IR_VAR || n->acc.idx[0]->var != l->loop.var ||
      n->acc.tensor->dtype != IR_DT_F32 || cg->written[n->acc.tensor->id])
    return false;
  for (int j = 0; j < *count; j++)
    if (ts[j] == n->acc.tensor) return false;
  if (*count < CG_MAX_PREFETCH) ts[(*count)++] = n->acc.tensor;
  return false;
}

static LLVMValueRef shfl_idx(CgCtx *cg, LLVMValueRef mask, LLVMValueRef v,
                             LLVMValueRef lane, bool is_float) {
  LLVMTypeRef ty = LLVMTypeOf(v);
  LLVMValueRef narrow = LLVMIsASExtInst(v) ? LLVMGetOperand(v, 0) : NULL;
  if (ty == cg->t_i64 && narrow && LLVMTypeOf(narrow) == cg->t_i32) /* a vertex id */
    return LLVMBuildSExt(cg->b, shfl_idx(cg, mask, narrow, lane, false), ty, "");
  if (ty == cg->t_f64 || ty == cg->t_i64) { /* as two 32-bit halves */
    LLVMTypeRef v2 = LLVMVectorType(cg->t_i32, 2);
    LLVMValueRef h = LLVMBuildBitCast(cg->b, v, v2, "");
    for (int k = 0; k < 2; k++) {
      LLVMValueRef part = LLVMBuildExtractElement(cg->b, h, cg_i32(cg, k), "");
      h = LLVMBuildInsertElement(cg->b, h, shfl_idx(cg, mask, part, lane, false),
                                 cg_i32(cg, k), "");
    }
    return LLVMBuildBitCast(cg->b, h, ty, "");
  }
  LLVMValueRef args[4] = {mask, v, lane, cg_i32(cg, 31)};
  return cg_intrinsic(cg, is_float ? "llvm.nvvm.shfl.sync.idx.f32"
                                   : "llvm.nvvm.shfl.sync.idx.i32",
                      NULL, 0, args, 4);
}

/* Removes `v` if nothing uses it, and then what computed it (its address,
 * the load a 64-bit index was extended from, the halves of a 64-bit
 * shuffle) when that was its only use: a dropped array must leave no
 * instruction that would keep it a kernel parameter. */
static void drop_unused_but(LLVMValueRef v, const LLVMValueRef *keep, int nkeep) {
  if (!v || !LLVMIsAInstruction(v) || LLVMGetFirstUse(v)) return;
  for (int i = 0; i < nkeep; i++)
    if (keep[i] == v) return;
  if (!LLVMIsALoadInst(v) && !LLVMIsAGetElementPtrInst(v) && !LLVMIsACastInst(v) &&
      !LLVMIsAExtractElementInst(v) && !LLVMIsAInsertElementInst(v) && !LLVMIsACallInst(v))
    return;
  int n = LLVMGetNumOperands(v);
  LLVMValueRef ops[8];
  if (n > 8) n = 8;
  for (int i = 0; i < n; i++) ops[i] = LLVMGetOperand(v, (unsigned)i);
  LLVMInstructionEraseFromParent(v);
  for (int i = 0; i < n; i++) drop_unused_but(ops[i], keep, nkeep);
}

static void drop_unused(LLVMValueRef v) { drop_unused_but(v, NULL, 0); }

/* The lanes executing here together: PTX activemask.b32 (LLVM 16 has no
 * intrinsic for it), a convergent call with side effects so that LLVM
 * neither moves it across the branches around it nor merges it. */
static LLVMValueRef active_mask(CgCtx *cg) {
  static const char text[] = "activemask.b32 $0;", cons[] = "=r";
  LLVMTypeRef fty = LLVMFunctionType(cg->t_i32, NULL, 0, 0);
  LLVMValueRef asm_ = LLVMGetInlineAsm(fty, (char *)text, sizeof text - 1,
                                       (char *)cons, sizeof cons - 1, 1, 0,
                                       LLVMInlineAsmDialectATT, 0);
  LLVMValueRef call = LLVMBuildCall2(cg->b, fty, asm_, NULL, 0, "mask");
  unsigned kind = LLVMGetEnumAttributeKindForName("convergent", 10);
  LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex,
                           LLVMCreateEnumAttribute(cg->ctx, kind, 0));
  return call;
}

typedef struct PfChunk {
  const IrNode *l;
  LLVMValueRef mask, of, eid_l, end_l;
  int nts;
  const IrTensor **ts;
  LLVMValueRef *w_l;
  LLVMBasicBlockRef chunk, next_chunk;
} PfChunk;

/* Largest unroll count whose remainder is emitted as straight-line copies
 * (docs/gpu-ir.md, "Unrolled edge loops"; a prefetched loop's partial
 * chunk): the remainder's switch holds U(U-1)/2 copies of the body, 28 at
 * U = 8. */
#define TAIL_UNROLL_MAX 8

/* An empty asm statement with side effects, ending each case of the
 * remainder's switch: the cases end alike (the last copy of the body, at
 * another position), and LLVM's SimplifyCFG would sink those last copies
 * into one block after the switch, behind a phi of their positions, so
 * that the last edge waited for the others again. LLVM sinks no inline
 * asm, and nothing past one; it emits no instruction. */
static void keep_apart(CgCtx *cg) {
  LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(cg->ctx), NULL, 0, 0);
  LLVMValueRef asm_ = LLVMGetInlineAsm(fty, (char *)"", 0, (char *)"", 0, 1, 0,
                                       LLVMInlineAsmDialectATT, 0);
  LLVMBuildCall2(cg->b, fty, asm_, NULL, 0, "");
}

/* One edge of a chunk, the one lane `from` loaded: its id and endpoint
 * (and prefetched weights) shuffled from that lane, the body emitted. */
static void chunk_copy(CgCtx *cg, const PfChunk *pc, LLVMValueRef from) {
  const IrNode *l = pc->l;
  LLVMValueRef mask = pc->mask, of = pc->of;
  int nts = pc->nts;
  const IrTensor **ts = pc->ts;
  CgVar *v = &cg->vars[l->loop.var->id];
  CgVar saved_var = *v;
  memset(v, 0, sizeof *v);
  v->bound = true;
  LLVMValueRef sh_eid = shfl_idx(cg, mask, pc->eid_l, from, false);
  LLVMValueRef sh_end = shfl_idx(cg, mask, pc->end_l, from, false);
  v->value = sh_eid;
  LLVMValueRef dst_load = NULL; /* loaded here, so dropped here if unused */
  if (l->loop.kind == IR_LOOP_OUT_EDGES) {
    v->src = of;
    v->dst = sh_end;
  } else {
    const CgVar *g = cg_group_row(cg, l->loop.of);
    v->src = sh_end;
    if (l->loop.kind == IR_LOOP_IN_EDGES) v->dst = of;
    else if (g && g->dst) v->dst = g->dst;
    else v->dst = dst_load = cg_graph_at(cg, CG_PARAM_GRP_DST, of, "dst");
  }
  int saved_npf = cg->npf;
  LLVMValueRef sh_w[CG_MAX_PREFETCH];
  for (int t = 0; t < nts; t++) {
    sh_w[t] = shfl_idx(cg, mask, pc->w_l[t], from, true);
    cg->pf[cg->npf].var = l->loop.var;
    cg->pf[cg->npf].tensor = ts[t];
    cg->pf[cg->npf].value = sh_w[t];
    cg->npf++;
  }
  cg->seq_depth++;
  cg_stmts(cg, l->loop.body);
  cg->seq_depth--;
  cg->npf = saved_npf;
  *v = saved_var;
  /* shuffles the body did not need, down to (not including) what the
   * chunk loaded: the other copies shuffle it too, and prefetch_loop
   * drops it when none needed it */
  LLVMValueRef keep[CG_MAX_PREFETCH + 4] = {pc->eid_l, pc->end_l, mask, of};
  for (int t = 0; t < nts; t++) keep[4 + t] = pc->w_l[t];
  drop_unused_but(dst_load, keep, 4 + nts);
  for (int t = 0; t < nts; t++) drop_unused_but(sh_w[t], keep, 4 + nts);
  drop_unused_but(sh_end, keep, 4 + nts);
  drop_unused_but(sh_eid, keep, 4 + nts);
}

/* A partial chunk takes its edges from the active lanes in order: the
 * lowest lane of `left` (a mask of lanes, not 0), then `left` without it. */
static LLVMValueRef lowest_lane(CgCtx *cg, LLVMValueRef left) {
  LLVMValueRef cargs[2] = {left, LLVMConstInt(cg->t_i1, 1, 0)};
  return cg_intrinsic(cg, "llvm.cttz", &cg->t_i32, 1, cargs, 2);
}
static LLVMValueRef without_lowest(CgCtx *cg, LLVMValueRef left) {
  return LLVMBuildAnd(cg->b, left, LLVMBuildSub(cg->b, left, cg_i32(cg, 1), ""), "");
}

/* A loop unrolled U times by hand, over trips [start, end):
 *   while (k + U <= end) { copies(at, U); k += U; }
 *   switch (end - k) { case r: copies(at, r) }   (0 < r < U)
 * LLVM's own unrolling would run the n mod U trips left over one at a time,
 * each waiting for the one before; here they are one block of r copies,
 * whose loads are all in flight at once. `at` is where the copies start:
 * the trip counter itself (at0 NULL: an edge loop's CSR position), or a
 * cursor of its own that each run of copies advances (a partial chunk's
 * mask of the lanes left). Entered from the builder's block; `body` and
 * `tail` are new blocks, `exit` is where every path ends. */
typedef struct Unroll {
  int u;
  LLVMTypeRef ty; /* the trip counter's type */
  bool nsw;       /* CSR positions: no signed wrap; a chunk's count: no unsigned wrap */
  LLVMValueRef start, end, at0;
  const char *name; /* the trip counter's */
  LLVMBasicBlockRef body, tail, exit;
  /* emits r copies from `at`; returns the cursor after them (at0 NULL:
   * unused) */
  LLVMValueRef (*copies)(CgCtx *cg, const void *ctx, LLVMValueRef at, int r);
  const void *ctx;
} Unroll;

static void unrolled(CgCtx *cg, const Unroll *un) {
  LLVMBuilderRef b = cg->b;
  int u = un->u;
  LLVMValueRef one_less = LLVMConstInt(un->ty, (unsigned long long)(u - 1), 1);
  LLVMValueRef by_u = LLVMConstInt(un->ty, (unsigned long long)u, 1);
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
  /* k + U <= end as k < end - (U - 1): far from overflow */
  LLVMValueRef lim = un->nsw ? LLVMBuildNSWSub(b, un->end, one_less, "lim")
                             : LLVMBuildSub(b, un->end, one_less, "lim");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, un->start, lim, ""), un->body, un->tail);

  LLVMPositionBuilderAtEnd(b, un->body);
  LLVMValueRef k = LLVMBuildPhi(b, un->ty, un->name);
  LLVMValueRef at = un->at0 ? LLVMBuildPhi(b, LLVMTypeOf(un->at0), "at") : k;
  LLVMValueRef at_next = un->copies(cg, un->ctx, at, u);
  LLVMValueRef next = un->nsw ? LLVMBuildNSWAdd(b, k, by_u, "") : LLVMBuildNUWAdd(b, k, by_u, "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
  LLVMValueRef br = LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, next, lim, ""), un->body,
                                    un->tail);
  unroll_hint(cg, br, 1); /* already unrolled: LLVM must not again */
  LLVMBasicBlockRef bbs[2] = {pre, latch};
  LLVMValueRef kin[2] = {un->start, next}, atin[2] = {un->at0, at_next};
  LLVMAddIncoming(k, kin, bbs, 2);
  if (un->at0) LLVMAddIncoming(at, atin, bbs, 2);

  LLVMPositionBuilderAtEnd(b, un->tail);
  LLVMValueRef kt = LLVMBuildPhi(b, un->ty, "k");
  LLVMAddIncoming(kt, kin, bbs, 2);
  LLVMValueRef att = kt;
  if (un->at0) {
    att = LLVMBuildPhi(b, LLVMTypeOf(un->at0), "at");
    LLVMAddIncoming(att, atin, bbs, 2);
  }
  LLVMValueRef left = LLVMBuildSub(b, un->end, kt, "left"); /* 0 .. U - 1, or < 0 */
  LLVMValueRef sw = LLVMBuildSwitch(b, left, un->exit, (unsigned)(u - 1));
  for (int r = u - 1; r >= 1; r--) {
    LLVMBasicBlockRef rb = cg_block(cg, "left");
    LLVMAddCase(sw, LLVMConstInt(un->ty, (unsigned long long)r, 1), rb);
    LLVMPositionBuilderAtEnd(b, rb);
    un->copies(cg, un->ctx, att, r);
    keep_apart(cg);
    LLVMBuildBr(b, un->exit);
  }
}

/* r edges of a partial chunk, straight-line, from the lanes of `left` in
 * order; returns the lanes left after them. */
static LLVMValueRef chunk_copies(CgCtx *cg, const void *ctx, LLVMValueRef left, int r) {
  for (int k = 0; k < r; k++) {
    chunk_copy(cg, ctx, lowest_lane(cg, left));
    left = without_lowest(cg, left);
  }
  return left;
}

/* The edges of a chunk, from block `body` (entered from the chunk's block)
 * to the next chunk: `cnt` (i32) of them, from the lanes of the active mask
 * in order; cnt NULL: 32, from lane j (the warp is whole). */
static void chunk_edges(CgCtx *cg, const PfChunk *pc, LLVMBasicBlockRef body,
                        LLVMValueRef cnt) {
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef i32 = cg->t_i32;
  const IrNode *l = pc->l;
  /* as for other loops: beyond 16 trips of a vector body ptxas spills */
  int unroll = cg->vec && l->loop.unroll > 16 ? 16 : l->loop.unroll;
  /* A partial chunk under @unroll(U): U copies at a time, then the r < U
   * left in one block. Rolled, a chunk of a short group (every chunk where
   * fewer than 32 lanes are active: F = 32 under 16-byte lanes keeps 8)
   * waited for each edge's row before shuffling the next edge's index.
   * Unrolled, on an H200 (bench/results/2026-11-30-H200-prefetch-partial-
   * chunks): spmm_groupsp 1.15-1.22x, spmm_vec4p 1.20-1.31x faster; both
   * still slower than spmm_groups, which loads no whole chunk of indices. */
  if (cnt && unroll > 1 && unroll <= TAIL_UNROLL_MAX) {
    LLVMPositionBuilderAtEnd(b, body);
    LLVMBasicBlockRef main = cg_block(cg, "chunk.main"); /* in this order */
    LLVMBasicBlockRef tail = cg_block(cg, "chunk.tail");
    Unroll un = {.u = unroll, .ty = i32, .nsw = false, .start = cg_i32(cg, 0), .end = cnt,
                 .at0 = pc->mask, .name = "j", .body = main, .tail = tail,
                 .exit = pc->next_chunk, .copies = chunk_copies, .ctx = pc};
    unrolled(cg, &un);
    return;
  }
  LLVMPositionBuilderAtEnd(b, body);
  LLVMValueRef j = LLVMBuildPhi(b, i32, "j");
  LLVMValueRef left = NULL, from = j;
  if (cnt) {
    left = LLVMBuildPhi(b, i32, "left");
    from = lowest_lane(cg, left);
  }
  chunk_copy(cg, pc, from);
  LLVMValueRef jn = LLVMBuildNUWAdd(b, j, cg_i32(cg, 1), "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
  LLVMValueRef more = LLVMBuildICmp(b, LLVMIntSLT, jn, cnt ? cnt : cg_i32(cg, 32), "");
  LLVMValueRef br = LLVMBuildCondBr(b, more, body, pc->next_chunk);
  /* with no @unroll the loop of 32 trips gets a count of 1, since LLVM
   * would unroll all 32 (and ptxas spill) */
  if (!cnt) unroll_hint(cg, br, unroll > 1 ? unroll : 1);
  LLVMValueRef jin[2] = {cg_i32(cg, 0), jn};
  LLVMBasicBlockRef bbs[2] = {pc->chunk, latch};
  LLVMAddIncoming(j, jin, bbs, 2);
  if (cnt) {
    LLVMPositionBuilderBefore(b, br);
    LLVMValueRef lin[2] = {pc->mask, without_lowest(cg, left)};
    LLVMAddIncoming(left, lin, bbs, 2);
  }
}

/* One run of loop l's body with its variable at `i`: the variable bound
 * (bind_var), the body emitted, the binding and the nesting state put
 * back. The plain loop emits it once; a tail-unrolled loop once per copy. */
static void body_copy(CgCtx *cg, const IrNode *l, LLVMValueRef i, LLVMValueRef of) {
  IrBind bind = l->loop.bind;
  CgVar *v = &cg->vars[l->loop.var->id];
  CgVar saved_var = *v;
  LLVMValueRef eager[3];
  int neager = bind_var(cg, l, i, of, v, eager);

  bool saved_block = cg->in_block, saved_warp = cg->in_warp,
       saved_lane = cg->in_lane, saved_thread = cg->in_thread;
  int saved_team = cg->team;
  if (bind == IR_BIND_WARP) cg->team = l->loop.team;
  if (bind == IR_BIND_NONE) cg->seq_depth++;
  else cg->bound_depth++;
  cg->in_block |= bind == IR_BIND_BLOCK;
  cg->in_warp |= bind == IR_BIND_WARP;
  cg->in_lane |= bind == IR_BIND_LANE;
  cg->in_thread |= bind == IR_BIND_THREAD;

  cg_stmts(cg, l->loop.body);

  if (bind == IR_BIND_NONE) cg->seq_depth--;
  else cg->bound_depth--;
  cg->in_block = saved_block;
  cg->in_warp = saved_warp;
  cg->in_lane = saved_lane;
  cg->in_thread = saved_thread;
  cg->team = saved_team;
  *v = saved_var;
  /* eager loads the body did not use would keep their arrays as kernel
   * parameters: drop them */
  for (int j = 0; j < neager; j++) drop_unused(eager[j]);
}



/* Whether a sequential @unroll(U) loop is emitted by unrolled_loop: an
 * edge loop (its trip count is a vertex's or a group's edges, often below
 * U) whose body holds no loop of its own (each copy is one block of
 * straight-line code) and no warp shuffle; or a panel row's pairs loop,
 * whose pair_edge slots are a test each (passes/panel.c). */
static bool has_loop(const IrNode *n, void *ctx) {
  (void)ctx;
  return n->kind == IR_LOOP && n->loop.kind != IR_LOOP_PAIR_EDGE;
}
static bool tail_unrolled(const IrNode *l) {
  if (l->loop.unroll > TAIL_UNROLL_MAX) return false;
  if (l->loop.kind != IR_LOOP_IN_EDGES && l->loop.kind != IR_LOOP_OUT_EDGES &&
      l->loop.kind != IR_LOOP_GROUP_EDGES && l->loop.kind != IR_LOOP_PAIRS)
    return false;
  return !ir_any(l->loop.body, has_loop, NULL);
}

/* r copies of an edge loop's body at CSR positions at .. at + r - 1. */
typedef struct PosCopies {
  const IrNode *l;
  LLVMValueRef of;
} PosCopies;

static LLVMValueRef position_copies(CgCtx *cg, const void *ctx, LLVMValueRef at, int r) {
  const PosCopies *pcs = ctx;
  for (int j = 0; j < r; j++)
    body_copy(cg, pcs->l, j ? LLVMBuildNSWAdd(cg->b, at, cg_idx(cg, j), "") : at, pcs->of);
  return NULL;
}

/* A sequential edge loop over [start, end) unrolled U times by hand
 * (`unrolled`): LLVM's own unrolling ran the n mod U edges left over one
 * at a time before the unrolled loop, each waiting for its index and then
 * its row: a group of 7 edges under U = 4 waited four times; here 7 edges
 * wait twice. The edges are added in the same order. */
static void unrolled_loop(CgCtx *cg, const IrNode *l, LLVMValueRef start,
                          LLVMValueRef end, LLVMValueRef of) {
  PosCopies pcs = {l, of};
  LLVMBasicBlockRef body = cg_block(cg, l->loop.var->name); /* in this order */
  LLVMBasicBlockRef tail = cg_block(cg, "tail");
  LLVMBasicBlockRef exit = cg_block(cg, "endfor");
  Unroll un = {.u = l->loop.unroll, .ty = cg->t_idx, .nsw = true, .start = start, .end = end,
               .name = l->loop.var->name, .body = body, .tail = tail, .exit = exit,
               .copies = position_copies, .ctx = &pcs};
  unrolled(cg, &un);
  LLVMPositionBuilderAtEnd(cg->b, un.exit);
}

/* A @prefetch edge loop over CSR positions [base, end): the header above. */
static void prefetch_loop(CgCtx *cg, const IrNode *l, LLVMValueRef base,
                          LLVMValueRef end, LLVMValueRef of) {
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef i32 = cg->t_i32;
  LLVMValueRef mask = active_mask(cg);
  LLVMValueRef n = cg_intrinsic(cg, "llvm.ctpop", &i32, 1, &mask, 1);
  LLVMValueRef lane = LLVMBuildAnd(b, cg_sreg(cg, "tid.x"), cg_i32(cg, 31), "lane");
  LLVMValueRef below = LLVMBuildSub(b, LLVMBuildShl(b, cg_i32(cg, 1), lane, ""),
                                    cg_i32(cg, 1), "");
  LLVMValueRef below_m = LLVMBuildAnd(b, mask, below, "");
  LLVMValueRef rank = cg_intrinsic(cg, "llvm.ctpop", &i32, 1, &below_m, 1);

  LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
  LLVMBasicBlockRef chunk = cg_block(cg, "chunk");
  LLVMBasicBlockRef next_chunk = cg_block(cg, "nextchunk");
  LLVMBasicBlockRef exit = cg_block(cg, "endfor");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, base, end, ""), chunk, exit);

  /* the chunk: each lane loads the scalars of its edge */
  LLVMPositionBuilderAtEnd(b, chunk);
  LLVMValueRef c = LLVMBuildPhi(b, cg->t_idx, "chunk");
  LLVMValueRef mine = LLVMBuildNSWAdd(b, c, cg_to_idx(cg, rank), "");
  LLVMValueRef k = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, mine, end, ""),
                                   mine, c, "k");
  CgParamKind eid_kind = l->loop.kind == IR_LOOP_OUT_EDGES ? CG_PARAM_OUT_EID
                                                           : CG_PARAM_IN_EID;
  CgParamKind end_kind = l->loop.kind == IR_LOOP_OUT_EDGES ? CG_PARAM_OUT_DST
                                                           : CG_PARAM_IN_SRC;
  LLVMValueRef eid_l = eid_kind == CG_PARAM_IN_EID && cg->csr_edges
                           ? cg_to_idx(cg, k) /* edge ids are CSR positions */
                           : cg_graph_at(cg, eid_kind, k, "eid_l");
  LLVMValueRef end_l = cg_graph_at(cg, end_kind, k, "nbr_l");
  const IrTensor *ts[CG_MAX_PREFETCH];
  int nts = 0;
  void *ctx[4] = {cg, (void *)l, &nts, ts};
  ir_any(l->loop.body, collect_pf, ctx);
  LLVMValueRef w_l[CG_MAX_PREFETCH];
  for (int j = 0; j < nts; j++) {
    LLVMValueRef p = LLVMBuildInBoundsGEP2(b, cg_elem_type(cg, ts[j]),
                                           cg_param(cg, CG_PARAM_TENSOR, ts[j]->id),
                                           &eid_l, 1, "");
    w_l[j] = cg_load_elems(cg, ts[j], p, 0, true);
  }
  LLVMValueRef left_n = LLVMBuildSub(b, end, c, "");
  LLVMValueRef n_idx = cg_to_idx(cg, n);
  LLVMValueRef cnt = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, n_idx, left_n, ""),
                                     n_idx, left_n, "cnt");
  cnt = LLVMBuildTrunc(b, cnt, i32, ""); /* at most 32: a no-op when narrow */

  /* a whole chunk of a whole warp takes the loop of 32 trips, which LLVM
   * unrolls (a shuffle is convergent: LLVM unrolls no loop holding one
   * with a remainder); the rest takes the general loop */
  LLVMBasicBlockRef whole = cg_block(cg, l->loop.var->name);
  LLVMBasicBlockRef part = cg_block(cg, l->loop.var->name);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, cnt, cg_i32(cg, 32), ""), whole,
                  part);
  PfChunk pc = {l, mask, of, eid_l, end_l, nts, ts, w_l,
                LLVMGetInsertBlock(b), next_chunk};
  chunk_edges(cg, &pc, whole, NULL);
  chunk_edges(cg, &pc, part, cnt);
  LLVMValueRef loaded[2] = {eid_l, end_l}; /* dropped last, each once */
  for (int t = 0; t < nts; t++) drop_unused_but(w_l[t], loaded, 2);
  drop_unused_but(end_l, loaded + 0, 1);
  drop_unused(eid_l);

  LLVMPositionBuilderAtEnd(b, next_chunk);
  LLVMValueRef cn = LLVMBuildNSWAdd(b, c, n_idx, "");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, cn, end, ""), chunk, exit);
  LLVMValueRef cin[2] = {base, cn};
  LLVMBasicBlockRef cbbs[2] = {pre, next_chunk};
  LLVMAddIncoming(c, cin, cbbs, 2);
  LLVMPositionBuilderAtEnd(b, exit);
}

/* `for e in pair_edge(q, s)`: the body once, with e the edge of slot s of
 * pair q, when the pair's mask has bit s (passes/panel.c). The mask is the
 * same for every lane of the warp or team (a pair is theirs together), so
 * the branch does not diverge; a body of sums has none (below). Measured
 * on an H200 (bench/results/2026-11-30-H200-panels): LLVM made each slot's
 * branch a select of every accumulated value, as many instructions as the
 * adds, taken or not; predicated, P = 4 on cnr-2000 went 0.30 -> 0.27 ms.
 * A switch on the mask was slower than either (0.33 ms). */
static void pair_edge(CgCtx *cg, const IrNode *l) {
  LLVMBuilderRef b = cg->b;
  const CgVar *q = &cg->vars[l->loop.of->var->id];
  if (!q->bound || !q->mask) {
    cg_error(cg, l->loc, "pair_edge loop '%s' is not inside the pairs loop of '%s'",
             l->loop.var->name, l->loop.of->var->name);
    return;
  }
  LLVMValueRef bit = LLVMBuildAnd(b, LLVMBuildLShr(b, q->mask, cg_idx(cg, l->loop.slot), ""),
                                  cg_idx(cg, 1), "");
  /* Sums into locals alone (what passes/panel.c makes): no branch, each
   * `+=` predicated on the bit. The slot's edge is read either way (a clear
   * slot repeats a set one's position, so the reads are in bounds). */
  bool sums = true;
  for (const IrNode *s = l->loop.body; s; s = s->next)
    sums &= s->kind == IR_SET && s->set.red == IR_RED_ADD && !cg->slot_bit &&
            (!cg->vec || cg->vars[s->set.var->id].in_vec);
  if (sums && l->loop.body) {
    cg->slot_bit = bit;
    body_copy(cg, l, NULL, q->value);
    cg->slot_bit = NULL;
    return;
  }
  LLVMBasicBlockRef body = cg_block(cg, l->loop.var->name);
  LLVMBasicBlockRef exit = cg_block(cg, "endslot");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntNE, bit, cg_idx(cg, 0), ""), body, exit);
  LLVMPositionBuilderAtEnd(b, body);
  body_copy(cg, l, NULL, q->value);
  LLVMBuildBr(b, exit);
  LLVMPositionBuilderAtEnd(b, exit);
}

void cg_loop(CgCtx *cg, const IrNode *l) {
  LLVMBuilderRef b = cg->b;
  IrBind bind = l->loop.bind;
  if (l->loop.kind == IR_LOOP_GROUPS && l->loop.shared) { /* shared.c */
    cg_shared_groups(cg, l);
    return;
  }
  if (!check_binding(cg, l)) return;
  if (l->loop.kind == IR_LOOP_PAIR_EDGE) {
    pair_edge(cg, l);
    return;
  }
  if (l->loop.vec > 1 && bind == IR_BIND_NONE && !cg->vec && cg->vec_scalar != l &&
      cg_vec_loop(cg, l))
    return;
  if (bind != IR_BIND_NONE && cg->bound_depth == 0 && !cg->launch_set)
    set_launch(cg, l);

  /* The iteration space [base, end) */
  LLVMValueRef base = cg_idx(cg, 0), end = NULL, of = NULL;
  switch (l->loop.kind) {
  case IR_LOOP_RANGE: end = cg_expr_as(cg, l->loop.extent, IR_TY_INT); break;
  case IR_LOOP_SRC_V:
  case IR_LOOP_DST_V: end = cg_param_idx(cg, CG_PARAM_NV, 0); break;
  case IR_LOOP_EDGES: end = cg_param_idx(cg, CG_PARAM_NE, 0); break;
  case IR_LOOP_IN_EDGES:
  case IR_LOOP_OUT_EDGES: {
    CgParamKind pk = l->loop.kind == IR_LOOP_IN_EDGES ? CG_PARAM_IN_PTR
                                                      : CG_PARAM_OUT_PTR;
    LLVMTypeRef et = cg->wide ? cg->t_i64 : cg->t_i32; /* offsets */
    LLVMValueRef ptr = cg_param(cg, pk, 0);
    of = cg_expr_as(cg, l->loop.of, IR_TY_INT);
    LLVMValueRef at = LLVMBuildGEP2(b, et, ptr, &of, 1, "");
    LLVMValueRef one = cg_i32(cg, 1);
    LLVMValueRef at1 = LLVMBuildGEP2(b, et, at, &one, 1, "");
    base = cg_to_idx(cg, cg_load(cg, et, at, true, "kbeg"));
    end = cg_to_idx(cg, cg_load(cg, et, at1, true, "kend"));
    break;
  }
  case IR_LOOP_GROUPS: /* docs/gpu-ir.md: the rows of the group table */
    end = cg_param_idx(cg, CG_PARAM_NGROUPS, 0);
    cg->kernel->group = l->loop.group;
    cg->kernel->group_panel = l->loop.panel;
    cg->kernel->group_ilv = l->loop.ilv;
    cg->kernel->group_cls = l->loop.ilv_cls;
    cg->kernel->group_thr = l->loop.ilv_thr;
    break;
  case IR_LOOP_GROUP_EDGES: /* a group row's edges, or a panel row's pairs */
  case IR_LOOP_PAIRS: {     /* (passes/panel.c): [first, end) of the row */
    const CgVar *g = cg_group_row(cg, l->loop.of);
    of = cg_expr_as(cg, l->loop.of, IR_TY_INT);
    base = g && g->gbeg ? g->gbeg : cg_graph_at(cg, CG_PARAM_GRP_FIRST, of, "gbeg");
    end = g && g->gend ? g->gend : cg_graph_at(cg, CG_PARAM_GRP_END, of, "gend");
    break;
  }
  case IR_LOOP_GROUP_ROWS: { /* docs/gpu-ir.md: a destination's rows */
    of = cg_expr_as(cg, l->loop.of, IR_TY_INT);
    LLVMValueRef of1 = LLVMBuildNSWAdd(b, of, cg_idx(cg, 1), "");
    base = cg_graph_at(cg, CG_PARAM_GRP_VPTR, of, "rbeg");
    end = cg_graph_at(cg, CG_PARAM_GRP_VPTR, of1, "rend");
    cg->kernel->group = l->loop.group;
    cg->kernel->group_ilv = l->loop.ilv;
    cg->kernel->group_cls = l->loop.ilv_cls;
    cg->kernel->group_thr = l->loop.ilv_thr;
    break;
  }
  case IR_LOOP_UNOWNED: /* passes/lower_mean.c: the rows no group owns */
    end = cg_param_idx(cg, CG_PARAM_NUNOWNED, 0);
    cg->kernel->group = l->loop.group;
    cg->kernel->group_panel = l->loop.panel;
    break;
  case IR_LOOP_PAIR_EDGE: unreachable("pair_edge loops are emitted by pair_edge()");
  case IR_LOOP_COUNT: unreachable("bad loop kind");
  }
  if (l->loop.prefetch && bind == IR_BIND_NONE && cg->in_lane &&
      (l->loop.kind == IR_LOOP_IN_EDGES || l->loop.kind == IR_LOOP_OUT_EDGES ||
       l->loop.kind == IR_LOOP_GROUP_EDGES)) {
    prefetch_loop(cg, l, base, end, of);
    return;
  }
  if (l->loop.prefetch) {
    cg_error(cg, l->loc, "prefetch: loop '%s' is not an unbound edge loop of "
             "one vertex or group inside a @lane loop", l->loop.var->name);
    return;
  }

  LLVMValueRef id, count;
  worker_idx(cg, bind, l->loop.team, &id, &count);
  LLVMValueRef start = LLVMBuildNSWAdd(b, base, id, "");
  int unroll = l->loop.unroll > 1 ? l->loop.unroll : l->loop.vec > 1 ? l->loop.vec : 0;
  /* in a vector body each unrolled trip keeps n floats per load in flight:
   * beyond 16 trips ptxas spills (spmm_vec4(32) did) */
  if (cg->vec && unroll > 16) unroll = 16;
  if (bind == IR_BIND_NONE && l->loop.unroll > 1 && tail_unrolled(l)) {
    unrolled_loop(cg, l, start, end, of);
    return;
  }
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
  LLVMBasicBlockRef body = cg_block(cg, l->loop.var->name);
  LLVMBasicBlockRef exit = cg_block(cg, "endfor");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, start, end, ""), body, exit);

  LLVMPositionBuilderAtEnd(b, body);
  LLVMValueRef i = LLVMBuildPhi(b, cg->t_idx, l->loop.var->name);
  body_copy(cg, l, i, of);

  LLVMValueRef next = LLVMBuildNUWAdd(b, i, count, "");
  LLVMValueRef more =
      bind == IR_BIND_NONE ? LLVMBuildICmp(b, LLVMIntSLT, next, end, "")
                           : LLVMBuildICmp(b, LLVMIntULT, next, end, "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
  LLVMValueRef br = LLVMBuildCondBr(b, more, body, exit);
  if (unroll) unroll_hint(cg, br, unroll);
  LLVMValueRef in_vals[2] = {start, next};
  LLVMBasicBlockRef in_bbs[2] = {pre, latch};
  LLVMAddIncoming(i, in_vals, in_bbs, 2);
  LLVMPositionBuilderAtEnd(b, exit);
}
