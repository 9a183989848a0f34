/* lang/check_loop.c: the checker's loops (lang/check.h).
 *
 * A loop's header: its domain (dst, src, edges, in_edges(v), out_edges(u),
 * a range 0..N, and IR text's groups), its annotations (IR text) and the
 * rules on which loop may be nested in which; then its variable, bound for
 * the body that check_stmt.c checks.
 */
#include <inttypes.h>
#include <string.h>

#include "lang/check.h"

/* ===========================================================================
 * Loops
 */

const char *check_loop_word(IrLoopKind k) {
  return k == IR_LOOP_SRC_V || k == IR_LOOP_DST_V || k == IR_LOOP_UNOWNED ? "vertex loop"
         : k == IR_LOOP_RANGE                     ? "range loop"
         : k == IR_LOOP_GROUPS                    ? "groups loop"
                                                  : "edge loop";
}

/* Loop annotations (IR text): @warp @block @lane @thread, @team(T) on a
 * @warp loop, @unroll(N),
 * @vec(N), @prefetch on an edge loop, @threads(N) and @occupancy(N) on a
 * stage's loop (into threads[0..1]), and on
 * a groups loop @shared and
 * @interleave(D) @classes(K) @threshold(N), into ilv[0..2] (docs/gpu-ir.md). */
static bool check_annots(Checker *c, const LangNode *loop, IrBind *bind_,
                         int *unroll, int *vec, int threads[2], int *team,
                         int ilv[3], bool *shared, bool *prefetch) {
  const LangNode *annots = loop->loop.annots;
  if (!annots) return true;
  if (!c->ir) {
    check_error(c, annots->loc, "`@%s` annotations are only allowed in IR "
                "text; use a schedule", annots->annot.name);
    return false;
  }
  bool ok = true;
  for (const LangNode *a = annots; a; a = a->next) {
    const char *name = a->annot.name;
    int b = ir_bind_lookup(name);
    bool counted = strcmp(name, "unroll") == 0 || strcmp(name, "vec") == 0 ||
                   strcmp(name, "interleave") == 0 || strcmp(name, "threshold") == 0 ||
                   strcmp(name, "classes") == 0;
    if (b > IR_BIND_NONE) {
      if (a->annot.has_value) {
        check_error(c, a->loc, "`@%s` takes no argument", name);
        ok = false;
      } else if (*bind_ != IR_BIND_NONE) {
        check_error(c, a->loc, "loop `%s` has two hardware bindings",
                    loop->loop.var);
        ok = false;
      }
      *bind_ = (IrBind)b;
    } else if (!strcmp(name, "shared")) {
      /* IR text: promote(g, shared) on a groups loop; verify.c checks it */
      if (a->annot.has_value || *shared) {
        check_error(c, a->loc, "`@shared` takes no argument and is given once");
        ok = false;
      }
      *shared = true;
    } else if (!strcmp(name, "prefetch")) {
      /* IR text: prefetch(e); passes/prefetch.c checks where it may be */
      if (a->annot.has_value || *prefetch) {
        check_error(c, a->loc, "`@prefetch` takes no argument and is given once");
        ok = false;
      }
      *prefetch = true;
    } else if (!strcmp(name, "team")) {
      /* IR text: team(w, T); verify.c checks where it may be */
      int64_t n = a->annot.has_value ? a->annot.value : 0;
      if (n < 1 || n > 32 || (n & (n - 1)) != 0) {
        check_error(c, a->loc, "`@team(T)` needs a power of two from 1 to 32");
        ok = false;
      } else if (*team) {
        check_error(c, a->loc, "`@team` is given twice");
        ok = false;
      } else {
        *team = (int)n;
      }
    } else if (!strcmp(name, "threads") || !strcmp(name, "occupancy")) {
      /* threads per block, or per SM (passes/occupancy.c) */
      int64_t n = a->annot.has_value ? a->annot.value : 0;
      bool occ = name[0] == 'o';
      int *slot = &threads[occ];
      int lo = occ ? IR_OCC_MIN : 32, hi = occ ? IR_OCC_MAX : 1024;
      if (c->depth > 0) {
        check_error(c, a->loc, "`@%s` belongs on a stage's loop, at the "
                    "top of the op body", name);
        ok = false;
      } else if (n < lo || n > hi || n % 32 != 0) {
        check_error(c, a->loc, "`@%s(N)` needs a multiple of 32 from %d to %d",
                    name, lo, hi);
        ok = false;
      } else if (*slot) {
        check_error(c, a->loc, "`@%s` is given twice", name);
        ok = false;
      } else {
        *slot = (int)n;
      }
    } else if (counted) {
      int *slot = name[0] == 'u' ? unroll : name[0] == 'v' ? vec
                  : name[0] == 'i' ? &ilv[0] : name[0] == 't' ? &ilv[1] : &ilv[2];
      if (!a->annot.has_value || a->annot.value <= 0 ||
          a->annot.value > 1 << 20) {
        check_error(c, a->loc, "`@%s` needs a positive count: @%s(4)", name,
                    name);
        ok = false;
      } else if (*slot) {
        check_error(c, a->loc, "`@%s` is given twice", name);
        ok = false;
      } else {
        *slot = (int)a->annot.value;
      }
    } else {
      check_error(c, a->loc, "unknown annotation `@%s`", name);
      ok = false;
    }
  }
  if (*team && *bind_ != IR_BIND_WARP) {
    check_error(c, annots->loc, "`@team(%d)` divides the lanes of a @warp loop; "
                "loop `%s` is not bound to warp", *team, loop->loop.var);
    ok = false;
  }
  return ok;
}

/* The bound of `for f in 0..BOUND`: an extent symbol or a positive integer
 * (IR text: any integer expression). NULL if refused. */
static IrNode *check_extent(Checker *c, const LangNode *loop) {
  const LangNode *lo = loop->loop.lo, *hi = loop->loop.hi;
  if (lo->i != 0) {
    check_error(c, lo->loc, "a range loop starts at 0: write 0..N, not %" PRId64
          "..N", lo->i);
    return NULL;
  }
  if (hi->kind == LANG_INT && hi->i <= 0) {
    check_error(c, hi->loc, "range loop `%s` has no iterations (its bound "
                "is %" PRId64 ")", loop->loop.var, hi->i);
    return NULL;
  }
  if (hi->kind == LANG_NAME && !check_lookup(c, hi->name) &&
      !check_find_sym(c->op, hi->name) && !ir_op_find_tensor(c->op, hi->name)) {
    check_error(c, hi->loc, "unknown extent symbol `%s`: extents are named in "
                "the types of tensors", hi->name);
    return NULL;
  }
  if (c->ir) {
    Ix ix;
    return check_index_expr(c, hi, &ix);
  }
  if (hi->kind == LANG_INT) return ir_iconst(c->a, hi->loc, hi->i);
  if (hi->kind == LANG_NAME && check_find_sym(c->op, hi->name))
    return ir_symref(c->a, hi->loc, check_find_sym(c->op, hi->name));
  if (hi->kind != LANG_NAME) {
    /* arithmetic, num_vertices() ...: check_index_expr says what is wrong */
    Ix ix;
    if (!check_index_expr(c, hi, &ix)) return NULL;
  }
  check_error(c, hi->loc, "the bound of a range loop must be an extent symbol "
              "or a positive integer");
  return NULL;
}

/* Vertex loops are stages: never nested in a vertex or an edge loop; an
 * edge loop is never nested in another; `edges` visits every edge, so it
 * is never nested in a vertex or an edge loop either. */
static bool check_nesting(Checker *c, const LangNode *n, IrLoopKind kind) {
  if (kind == IR_LOOP_RANGE) return true;
  for (int i = c->nloops - 1; i >= 0; i--) {
    IrLoopKind outer = c->loops[i].kind;
    if (outer == IR_LOOP_RANGE) continue;
    /* a groups or unowned loop is a stage, as a vertex loop (IR text) */
    bool outer_edge = outer != IR_LOOP_SRC_V && outer != IR_LOOP_DST_V &&
                      outer != IR_LOOP_GROUPS && outer != IR_LOOP_UNOWNED;
    bool inner_edge = kind != IR_LOOP_SRC_V && kind != IR_LOOP_DST_V &&
                      kind != IR_LOOP_GROUPS && kind != IR_LOOP_UNOWNED;
    if (kind == IR_LOOP_EDGES) {
      check_error(c, n->loc, "`for %s in edges` visits every edge and cannot "
                  "be nested inside %s `%s`%s", n->loop.var,
                  check_loop_word(outer), c->loops[i].var->name,
                  outer == IR_LOOP_DST_V ? "; use in_edges(...)" : "");
      return false;
    }
    if (!inner_edge || outer_edge) {
      check_error(c, n->loc, "%s `%s` is nested inside %s `%s`%s",
                  check_loop_word(kind), n->loop.var, check_loop_word(outer),
                  c->loops[i].var->name,
                  inner_edge ? "" : "; a vertex loop is a stage of its own");
      return false;
    }
  }
  return true;
}

IrNode *check_loop(Checker *c, const LangNode *n) {
  IrLoopKind kind = IR_LOOP_RANGE;
  IrVarKind vkind = IR_VAR_INDEX;
  IrNode *extent = NULL, *of = NULL;
  int group = 0;
  const char *dom = n->loop.dom;
  bool header_ok = true;
  if (!dom) {
    extent = check_extent(c, n);
    header_ok = extent != NULL;
  } else if (!strcmp(dom, "dst") || !strcmp(dom, "src") ||
             !strcmp(dom, "edges")) {
    kind = dom[0] == 'd' ? IR_LOOP_DST_V : dom[0] == 's' ? IR_LOOP_SRC_V
                                                         : IR_LOOP_EDGES;
    vkind = kind == IR_LOOP_DST_V ? IR_VAR_DST_V
            : kind == IR_LOOP_SRC_V ? IR_VAR_SRC_V : IR_VAR_EDGE;
    if (n->loop.of) {
      check_error(c, n->loop.of->loc, "`for ... in %s` takes no argument", dom);
      header_ok = false;
    }
  } else if (!strcmp(dom, "in_edges") || !strcmp(dom, "out_edges")) {
    bool in = dom[0] == 'i';
    kind = in ? IR_LOOP_IN_EDGES : IR_LOOP_OUT_EDGES;
    vkind = IR_VAR_EDGE;
    if (!n->loop.of) {
      check_error(c, n->loc, "`%s` needs a vertex: %s", dom,
                  in ? "in_edges(v) of a `for v in dst`"
                     : "out_edges(u) of a `for u in src`");
      header_ok = false;
    } else {
      of = check_vertex_arg(c, dom, n->loop.of,
                            in ? IR_VAR_DST_V : IR_VAR_SRC_V);
      header_ok = of != NULL;
    }
  } else if (c->ir && !strcmp(dom, "groups")) {
    /* IR text: GNNAdvisor's neighbour groups (passes/group.c) */
    kind = IR_LOOP_GROUPS;
    if (!n->loop.of || n->loop.of->kind != LANG_INT || n->loop.of->i < 1 ||
        n->loop.of->i > 1 << 20) {
      check_error(c, n->loc, "`groups` needs a group size: groups(4)");
      header_ok = false;
    } else {
      group = (int)n->loop.of->i;
    }
  } else if (c->ir && !strcmp(dom, "unowned")) {
    /* IR text: the destinations G-groups do not own (passes/lower_mean.c) */
    kind = IR_LOOP_UNOWNED;
    vkind = IR_VAR_DST_V;
    if (!n->loop.of || n->loop.of->kind != LANG_INT || n->loop.of->i < 1 ||
        n->loop.of->i > 1 << 20) {
      check_error(c, n->loc, "`unowned` needs a group size: unowned(4)");
      header_ok = false;
    } else {
      group = (int)n->loop.of->i;
    }
  } else if (c->ir && !strcmp(dom, "group_edges")) {
    kind = IR_LOOP_GROUP_EDGES;
    vkind = IR_VAR_EDGE;
    const LangNode *g = n->loop.of;
    const Binding *gb =
        g && g->kind == LANG_NAME ? check_lookup(c, g->name) : NULL;
    const IrVar *gv = gb ? gb->var : NULL;
    bool in_groups = false;
    for (int i = 0; gv && i < c->nloops; i++)
      in_groups |= c->loops[i].var == gv && c->loops[i].kind == IR_LOOP_GROUPS;
    if (!in_groups) {
      check_error(c, g ? g->loc : n->loc, "`group_edges` takes the variable of "
                  "an enclosing `for g in groups(G)`");
      header_ok = false;
    } else {
      of = ir_var(c->a, g->loc, (IrVar *)gv);
    }
  } else if (c->ir && !strcmp(dom, "group_rows")) {
    /* IR text: a destination's rows of a group table (passes/segment.c) */
    kind = IR_LOOP_GROUP_ROWS;
    if (!n->loop.of || !n->loop.lo || n->loop.lo->i < 1 || n->loop.lo->i > 1 << 20) {
      check_error(c, n->loc, "`group_rows` needs a vertex and a group size: "
            "group_rows(v, 4)");
      header_ok = false;
    } else {
      group = (int)n->loop.lo->i;
      of = check_vertex_arg(c, dom, n->loop.of, IR_VAR_DST_V);
      header_ok = of != NULL;
    }
  } else {
    check_error(c, n->loc, "unknown loop domain `%s`; expected dst, src, "
                "edges, in_edges(v), out_edges(u) or 0..N", dom);
    header_ok = false;
  }
  if (dom && n->loop.lo && kind != IR_LOOP_GROUP_ROWS) {
    check_error(c, n->loop.lo->loc, "`%s` takes one argument", dom);
    header_ok = false;
  }
  if (header_ok) header_ok = check_nesting(c, n, kind);
  IrBind b = IR_BIND_NONE;
  int unroll = 0, vec = 0, threads[2] = {0, 0}, team = 0, ilv[3] = {0, 0, 0};
  bool shared = false, prefetch = false;
  bool ok = check_annots(c, n, &b, &unroll, &vec, threads, &team, ilv, &shared,
                         &prefetch);
  bool table = kind == IR_LOOP_GROUPS || (kind == IR_LOOP_GROUP_ROWS && !shared);
  if (ok && (ilv[0] | ilv[1] | ilv[2] || shared) &&
      (!table || ((ilv[1] | ilv[2]) && !ilv[0]) || (!ilv[0] && !shared))) {
    check_error(c, n->loc, "`@interleave(D)` (and `@classes(K)` or "
                "`@threshold(N)` with it) and `@shared` belong on a groups "
                "loop");
    ok = false;
  } else if (ok && (ilv[2] == 1 || ilv[2] > IR_MAX_CLASSES)) {
    check_error(c, n->loc, "`@classes(K)` takes 2 to %d classes, not %d",
          IR_MAX_CLASSES, ilv[2]);
    ok = false;
  } else if (ok && ilv[1] && ilv[2] > 2) {
    check_error(c, n->loc, "`@threshold(N)` splits two classes; the %d of "
          "`@classes(%d)` are quantiles of the in-degrees", ilv[2], ilv[2]);
    ok = false;
  }

  /* The variable: a bad one if the header was wrong, so that its uses do
   * not pile up more errors. */
  int mark = c->nbinds;
  IrVar *var = NULL;
  if (check_new_name(c, n->loop.var, n->loop.var_loc, "loop variable") &&
      header_ok)
    var = ir_op_add_var(c->a, c->op, n->loop.var, n->loop.var_loc, vkind);
  check_bind(c, n->loop.var, var, n->loop.var_loc);
  if (var) {
    c->loops = check_grow(c->a, c->loops, c->nloops, &c->caploops,
                          sizeof(LoopCtx));
    c->loops[c->nloops++] = (LoopCtx){var, kind, of};
  }
  c->depth++;
  IrNode *body = check_block(c, n->loop.body);
  c->depth--;
  if (var) c->nloops--;
  c->nbinds = mark;
  if (!var || !ok) return NULL;
  IrNode *loop = ir_loop(c->a, n->loc, var, kind, extent, of, body);
  loop->loop.bind = b;
  loop->loop.unroll = unroll;
  loop->loop.vec = vec;
  loop->loop.threads = threads[0];
  loop->loop.occ = threads[1];
  loop->loop.team = team == 32 ? 0 : team;
  loop->loop.group = group;
  loop->loop.ilv = ilv[0];
  loop->loop.ilv_cls = ilv[0] ? (ilv[2] ? ilv[2] : 2) : 0;
  loop->loop.ilv_thr = ilv[1];
  loop->loop.shared = shared;
  loop->loop.prefetch = prefetch;
  return loop;
}
