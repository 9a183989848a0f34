/* ir/file.c: writing a user's file without ever losing it.
 *
 * Every file gop writes for a user (.npy outputs, kernel packs) goes
 * through a temporary file in the same directory that is renamed over the
 * target once it is complete and on disk, so a reader sees either the old
 * file or the whole new one, and an error or a crash never leaves a
 * truncated file behind.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir.h"

/* Creates `path.tmp.PID.K` exclusively (mode 0666 less the umask, like any
 * output); returns the descriptor, or -1 with errno set. */
static int open_temp(const char *path, char *tmp, size_t cap) {
  for (int k = 0; k < 100; k++) {
    snprintf(tmp, cap, "%s.tmp.%ld.%d", path, (long)getpid(), k);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

int ir_write_file(const char *path, const char *what, IrFileWriter fill,
                  const void *ctx, Diag *d) {
  Loc at = {path, 0, 0};
  const char *sep = what ? " " : "";
  what = what ? what : "";
  size_t cap = strlen(path) + 64;
  char *tmp = malloc(cap);
  int fd = tmp ? open_temp(path, tmp, cap) : -1;
  if (fd < 0) {
    ir_error(d, at, "cannot write%s%s: %s", sep, what, tmp ? strerror(errno) : "out of memory");
    free(tmp);
    return -1;
  }
  FILE *f = fdopen(fd, "wb");
  if (!f) {
    int err = errno;
    close(fd);
    unlink(tmp);
    free(tmp);
    ir_error(d, at, "cannot write%s%s: %s", sep, what, strerror(err));
    return -1;
  }
  fill(f, ctx);
  bool ok = !ferror(f) && fflush(f) == 0 && fsync(fd) == 0;
  int err = errno;
  if (fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && rename(tmp, path) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    unlink(tmp);
    ir_error(d, at, "cannot write%s%s: %s", sep, what, strerror(err ? err : EIO));
  }
  free(tmp);
  return ok ? 0 : -1;
}
