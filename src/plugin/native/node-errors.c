/* System errors worded as Node words them, so that messages match the TypeScript forwarder. */
#define _GNU_SOURCE
#include "node-errors.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "buf.h"

/* Node names errors by their code ("ENOENT") and libuv's wording for the common ones. */
const char *errno_name(int e) {
  const char *name = strerrorname_np(e);
  return name ? name : "UNKNOWN";
}
void put_errno_text(struct buf *b, int e) {
  static const struct {
    int e;
    const char *text;
  } uv[] = {
      {EACCES, "permission denied"}, {EEXIST, "file already exists"}, {ENOENT, "no such file or directory"},
      {ENOTDIR, "not a directory"}, {EPERM, "operation not permitted"}, {EROFS, "read-only file system"},
      {ENOSPC, "no space left on device"}, {EIO, "i/o error"}, {ENAMETOOLONG, "name too long"},
      {ELOOP, "too many symbolic links encountered"}, {EISDIR, "illegal operation on a directory"},
      {EMFILE, "too many open files"}, {ENFILE, "file table overflow"}, {EINVAL, "invalid argument"},
      {EXDEV, "cross-device link not permitted"}, {ENOMEM, "not enough memory"}, {EBUSY, "resource busy or locked"},
  };
  for (size_t k = 0; k < sizeof uv / sizeof uv[0]; k++) {
    if (uv[k].e == e) {
      put_str(b, uv[k].text);
      return;
    }
  }
  const char *s = strerror(e);
  put_char(b, (char)(s[0] >= 'A' && s[0] <= 'Z' ? s[0] + 32 : s[0]));
  put_str(b, s + 1);
}
