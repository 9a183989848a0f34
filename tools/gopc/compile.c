/* tools/gopc/compile.c: the subcommands that compile: check (parse and
 * check files), emit (print a stage of an operator's compilation), pack
 * (compile to a kernel pack for `gopc run --pack`) and passes (list the
 * lowering passes, the names --dump-after takes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gopc.h"

static const char *usage_check =
    "usage: gopc check FILE.gop...\n"
    "Parses and checks each file; prints `file:line:col: error: ...` for\n"
    "every problem found and exits 1 if there was any.\n";

static const char *usage_emit =
    "usage: gopc emit FILE [--op NAME] [--stage STAGE] [--schedule S]\n"
    "                 [--target sm_XX] [--dump-after PASS] [--time] [--dtype T]\n"
    "                 [--index64] [--csr-edges]\n"
    "Prints a stage of the compilation of operator NAME (every operator of\n"
    "FILE when --op is left out):\n"
    "  ast      the syntax tree of the file, with line:col of each node\n"
    "  ir       the checked loop-nest IR in its text form (the default)\n"
    "  sched    the IR after the schedule's primitives\n"
    "  lowered  the GPU-ready IR after the lowering passes\n"
    "  llvm     the LLVM module after default<O3>\n"
    "  ptx      the PTX of the NVPTX backend\n"
    "  --schedule S     a named schedule with arguments, e.g. 'warp_vertex(1, 2)',\n"
    "                   or directives 'split(f, 32) -> (fo, fi); bind(fi, lane)';\n"
    "                   default: the default schedule\n"
    "  --target sm_XX   sm_80, sm_86, sm_89 or sm_90 (default: the GPU's, else sm_90)\n"
    "  --dump-after P   also print the IR after lowering pass P (gopc passes)\n"
    "  --time           print the time of each compilation step to stderr\n"
    "  --dtype T        instantiate the operator in T (f16, bf16, f32, f64): its\n"
    "                   f32 tensors take that type (docs/language.md, Types)\n"
    "  --index64        compile for 64-bit indices (edge ids, CSR offsets and all\n"
    "                   integers in i64), as graphs past 2^31 edges need; also\n"
    "                   GOP_INDEX64=1 (docs/index64.md)\n"
    "  --csr-edges      compile for a graph whose edge ids are its CSR positions\n"
    "                   (arcs sorted by destination, or reordered): an in-edge's\n"
    "                   id is its position, no edge-id array is read; runs choose\n"
    "                   this from their graph (docs/gpu-ir.md, Edge ids)\n";

static const char *usage_pack =
    "usage: gopc pack FILE [--op NAME] [--schedule S] [--target sm_XX] [--dtype T]\n"
    "                 [--index64] [--csr-edges] -o X.pack\n"
    "Compiles the operator and writes a kernel pack: its PTX and what a\n"
    "runtime needs to launch it, so that `gopc run --pack X.pack` can run\n"
    "it on a machine without LLVM.\n"
    "  --index64   kernels of 64-bit indices (also GOP_INDEX64=1), for graphs past\n"
    "              2^31 edges (or, with GOP_INDEX64=1 where it runs, any graph);\n"
    "              the pack records its width and a run of the other width is\n"
    "              refused (docs/index64.md)\n"
    "  --csr-edges kernels for graphs whose edge ids are their CSR positions\n"
    "              (docs/gpu-ir.md, Edge ids); a run on another graph is refused\n";

static const char *usage_passes =
    "usage: gopc passes\n"
    "Lists the lowering passes in the order they run, each with a summary.\n";

GopModule *gopc_load_module(GopContext *ctx, const char *file, const char **op_name) {
  if (strncmp(file, "stdlib:", 7) == 0) {
    GopModule *m = gop_stdlib(ctx);
    if (m && file[7]) {
      if (*op_name && strcmp(*op_name, file + 7) != 0) {
        fprintf(stderr, "gopc: %s names operator %s but --op says %s\n", file,
                file + 7, *op_name);
        return NULL;
      }
      *op_name = file + 7;
    }
    return m;
  }
  return gop_compile_file(ctx, file);
}

/* ---- check ---- */

int gopc_check(int argc, char **argv) {
  const char **files = calloc((size_t)argc + 1, sizeof *files);
  if (!files) return GOPC_EXIT_INPUT;
  int nfiles = 0;
  GopcArgs args = {.usage = usage_check, .prefix = "gopc: ",
                   .args = files, .max_args = argc, .nargs = &nfiles};
  int status = argc < 1 ? gopc_usage_error(&args, "check needs a file")
                        : gopc_parse(&args, argc, argv);
  if (status == GOPC_GO_ON) {
    status = 0;
    for (int i = 0; i < nfiles; i++) {
      GopContext *ctx = gop_context_new();
      gop_set_diagnostic_stream(ctx, stderr);
      const char *op = NULL;
      GopModule *m = gopc_load_module(ctx, files[i], &op);
      if (!m) status = GOPC_EXIT_INPUT;
      gop_context_free(ctx);
    }
  }
  free(files);
  return status;
}

/* ---- emit, pack ---- */

/* What emit and pack share: the operator and how to compile it. */
typedef struct CompileArgs {
  const char *file, *op_name, *stage_name, *out, *dtype;
  GopCompileOptions opts;
  bool time;
} CompileArgs;

static void print_times(GopContext *ctx) {
  GopCompileTimes t;
  gop_compile_times(ctx, &t);
  fprintf(stderr,
          "compile times (ms): schedule %.2f, lower %.2f, LLVM IR %.2f, "
          "O3 %.2f, PTX %.2f\n",
          t.schedule_ms, t.lower_ms, t.llvm_build_ms, t.llvm_opt_ms, t.ptx_emit_ms);
}

int gopc_emit(int argc, char **argv) {
  CompileArgs c = {.stage_name = "ir"};
  const GopcOption options[] = {
      {"--time", GOPC_BOOL, .dest = &c.time},
      {"--op", GOPC_STRING, .dest = &c.op_name},
      {"--stage", GOPC_STRING, .dest = &c.stage_name},
      {"--schedule", GOPC_STRING, .dest = &c.opts.schedule},
      {"--target", GOPC_STRING, .dest = &c.opts.target},
      {"--dump-after", GOPC_STRING, .dest = &c.opts.dump_after},
      {"--dtype", GOPC_STRING, .dest = &c.dtype},
      {"--index64", GOPC_CONST, .dest = &c.opts.index_bits, .value = 64},
      {"--csr-edges", GOPC_CONST, .dest = &c.opts.csr_edges, .value = 1},
      {NULL},
  };
  GopcArgs args = {.usage = usage_emit, .prefix = "gopc: ", .options = options,
                   .args = &c.file, .max_args = 1};
  int rc = gopc_parse(&args, argc, argv);
  if (rc != GOPC_GO_ON) return rc;
  if (!c.file) return gopc_usage_error(&args, "a file (or stdlib:NAME) is needed");
  int stage = gop_stage_lookup(c.stage_name);
  if (stage < 0)
    return gopc_usage_error(&args,
                            "--stage %s: unknown stage (ast, ir, sched, lowered, llvm, ptx)",
                            c.stage_name);

  GopContext *ctx = gop_context_new();
  gop_set_diagnostic_stream(ctx, stderr);
  int status = GOPC_EXIT_INPUT;
  const char *op_name = c.op_name;
  GopModule *m = gopc_load_module(ctx, c.file, &op_name);
  if (m) {
    int first = 0, last = gop_module_num_ops(m) - 1;
    if (op_name) {
      GopOp *op = gop_module_find_op(m, op_name);
      if (!op) goto done;
      for (first = 0; gop_module_op(m, first) != op; first++) {}
      last = first;
    }
    if (stage == GOP_STAGE_AST) last = first; /* the AST is the whole file */
    status = 0;
    for (int i = first; i <= last; i++) {
      const GopOp *op = gop_module_op(m, i);
      if (c.dtype && stage != GOP_STAGE_AST && !(op = gop_op_retype(op, c.dtype))) {
        status = GOPC_EXIT_USAGE;
        break;
      }
      char *text = gop_emit_with(op, (GopStage)stage, &c.opts);
      if (!text) {
        status = GOPC_EXIT_INPUT;
        break;
      }
      fputs(text, stdout);
      if (i < last) fputc('\n', stdout);
      free(text);
      if (c.time) print_times(ctx);
    }
  }
done:
  gop_context_free(ctx);
  return status;
}

int gopc_pack(int argc, char **argv) {
  CompileArgs c = {0};
  const GopcOption options[] = {
      {"--op", GOPC_STRING, .dest = &c.op_name},
      {"--schedule", GOPC_STRING, .dest = &c.opts.schedule},
      {"--target", GOPC_STRING, .dest = &c.opts.target},
      {"-o", GOPC_STRING, .dest = &c.out},
      {"--output", GOPC_STRING, .dest = &c.out},
      {"--dtype", GOPC_STRING, .dest = &c.dtype},
      {"--index64", GOPC_CONST, .dest = &c.opts.index_bits, .value = 64},
      {"--csr-edges", GOPC_CONST, .dest = &c.opts.csr_edges, .value = 1},
      {NULL},
  };
  GopcArgs args = {.usage = usage_pack, .prefix = "gopc: ", .options = options,
                   .args = &c.file, .max_args = 1};
  int rc = gopc_parse(&args, argc, argv);
  if (rc != GOPC_GO_ON) return rc;
  if (!c.file) return gopc_usage_error(&args, "a file (or stdlib:NAME) is needed");
  if (!c.out) return gopc_usage_error(&args, "pack needs -o X.pack");
  GopContext *ctx = gop_context_new();
  gop_set_diagnostic_stream(ctx, stderr);
  int status = GOPC_EXIT_INPUT;
  const char *op_name = c.op_name;
  GopModule *m = gopc_load_module(ctx, c.file, &op_name);
  GopOp *op = NULL;
  if (m && !op_name && gop_module_num_ops(m) == 1) op = gop_module_op(m, 0);
  else if (m && op_name) op = gop_module_find_op(m, op_name);
  else if (m)
    fprintf(stderr, "gopc: error: %s has several operators: choose one with --op\n", c.file);
  if (op && c.dtype) op = gop_op_retype(op, c.dtype);
  if (op && gop_pack(op, &c.opts, c.out) == 0) {
    printf("%s: kernel pack of %s written to %s\n", c.file, gop_op_name(op), c.out);
    status = 0;
  }
  gop_context_free(ctx);
  return status;
}

/* ---- passes ---- */

int gopc_passes(int argc, char **argv) {
  GopcArgs args = {.usage = usage_passes, .prefix = "gopc: ", .no_options = true};
  int rc = gopc_parse(&args, argc, argv);
  if (rc != GOPC_GO_ON) return rc;
  for (int i = 0; i < gop_pass_count(); i++)
    printf("%-14s %s\n", gop_pass_name(i), gop_pass_summary(i));
  return 0;
}
