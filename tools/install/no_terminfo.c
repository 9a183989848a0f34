/* tools/install/no_terminfo.c: the four terminfo functions LLVM's Support
 * library calls, for a libgop.so with LLVM linked in (GOP_STATIC, the
 * Python wheel).
 *
 * LLVM asks terminfo one thing: whether an output stream is a terminal that
 * takes colours (terminalHasColors in llvm/lib/Support/Unix/Process.inc).
 * gop never asks it: its diagnostics are its own text. Debian's libtinfo.a
 * is not position-independent, so it cannot go into a shared library, and
 * the shared libtinfo.so.6 would make the wheel depend on more than glibc.
 * These answer "no terminal database", which LLVM reads as "no colours".
 *
 * The names are terminfo's, not gop's, because LLVM calls them by those
 * names. They stay local to libgop.so (api/libgop.map exports gop_* only),
 * so a process that also loads the real libtinfo (Python with readline)
 * keeps its own. Executables (gopc, the REPL) link the real archive.
 */
#include <stddef.h>

struct term;

/* Fails as setupterm does when no terminfo database is found: ERR, with
 * *errret = -1. */
int setupterm(const char *term, int fd, int *errret) {
  (void)term;
  (void)fd;
  if (errret) *errret = -1;
  return -1;
}

/* There is never a current terminal to swap. */
struct term *set_curterm(struct term *t) {
  (void)t;
  return NULL;
}

int del_curterm(struct term *t) {
  (void)t;
  return 0;
}

/* -2: "not a numeric capability" (never reached: setupterm fails first). */
int tigetnum(const char *cap) {
  (void)cap;
  return -2;
}
