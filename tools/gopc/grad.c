/* tools/gopc/grad.c: grad, the gradient operators of an operator, derived
 * in the IR (gop_grad, docs/autodiff.md), printed as IR text or as any
 * later stage of their compilation.
 */
#include <stdio.h>
#include <stdlib.h>

#include "gopc.h"

static const char *usage_grad =
    "usage: gopc grad FILE [--op NAME] [--wrt X,W] [--joint] [--stage STAGE]\n"
    "                 [--schedule S] [--target sm_XX] [--edge-traffic]\n"
    "Derives the gradient operators of operator NAME (reverse mode, in the\n"
    "IR): one per input named by --wrt (default: every floating-point input),\n"
    "each an ordinary operator OP_grad_X whose output dX is the gradient of\n"
    "<dY, Y> with respect to X for the adjoints dY of the outputs. Prints them\n"
    "as IR text (the default), or any later stage of their compilation:\n"
    "  --joint          one operator OP_grad_X_W with an output per input,\n"
    "                   sharing what the gradients have in common\n"
    "  --stage S        ir, sched, lowered, llvm or ptx (as gopc emit)\n"
    "  --schedule S     the schedule to compile them with (default: the default)\n"
    "  --target sm_XX   sm_80, sm_86, sm_89 or sm_90\n"
    "  --edge-traffic   print, instead of the operators, the tensors on the\n"
    "                   edges that the forward operator and each derived one\n"
    "                   read and write, as passes (stages touching them) and\n"
    "                   bytes per |E| x extents (docs/autodiff.md)\n"
    "A derivation the IR cannot express is refused with the construct's\n"
    "location; exit status 1.\n";

int gopc_grad(int argc, char **argv) {
  const char *file = NULL, *op_name = NULL, *wrt = NULL, *stage_name = "ir";
  GopCompileOptions opts = {0};
  bool joint = false, traffic = false;
  const GopcOption options[] = {
      {"--op", GOPC_STRING, .dest = &op_name},
      {"--wrt", GOPC_STRING, .dest = &wrt},
      {"--joint", GOPC_BOOL, .dest = &joint},
      {"--edge-traffic", GOPC_BOOL, .dest = &traffic},
      {"--stage", GOPC_STRING, .dest = &stage_name},
      {"--schedule", GOPC_STRING, .dest = &opts.schedule},
      {"--target", GOPC_STRING, .dest = &opts.target},
      {NULL},
  };
  GopcArgs args = {.usage = usage_grad, .prefix = "gopc: ", .options = options,
                   .args = &file, .max_args = 1};
  int rc = gopc_parse(&args, argc, argv);
  if (rc != GOPC_GO_ON) return rc;
  if (!file) return gopc_usage_error(&args, "a file (or stdlib:NAME) is needed");
  int stage = gop_stage_lookup(stage_name);
  if (stage < 0 || stage == GOP_STAGE_AST)
    return gopc_usage_error(&args, "--stage %s: not a stage of a derived operator "
                            "(ir, sched, lowered, llvm, ptx)", stage_name);
  if (wrt && !*wrt) return gopc_usage_error(&args, "--wrt needs input names, e.g. X,W");

  GopContext *ctx = gop_context_new();
  gop_set_diagnostic_stream(ctx, stderr);
  int status = GOPC_EXIT_INPUT;
  GopModule *m = gopc_load_module(ctx, file, &op_name);
  GopOp *op = NULL;
  if (m && op_name) op = gop_module_find_op(m, op_name);
  else if (m && gop_module_num_ops(m) == 1) op = gop_module_op(m, 0);
  else if (m)
    fprintf(stderr, "gopc: error: %s has several operators: choose one with --op\n", file);
  GopModule *g = !op ? NULL : joint ? gop_grad_joint(op, wrt) : gop_grad(op, wrt);
  if (g && traffic) {
    status = 0;
    for (int i = -1; i < gop_module_num_ops(g); i++) {
      char *text = gop_edge_traffic(i < 0 ? op : gop_module_op(g, i));
      if (text) fputs(text, stdout);
      free(text);
    }
  } else if (g) {
    status = 0;
    for (int i = 0; i < gop_module_num_ops(g); i++) {
      char *text = gop_emit_with(gop_module_op(g, i), (GopStage)stage, &opts);
      if (!text) {
        status = GOPC_EXIT_INPUT;
        break;
      }
      if (i) fputc('\n', stdout);
      fputs(text, stdout);
      free(text);
    }
  }
  gop_context_free(ctx);
  return status;
}
