/* The durable DEL spool, as src/plugin/spool.ts writes it. */
#define _GNU_SOURCE
#include "spool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bounds.h"
#include "buf.h"
#include "json.h"
#include "node-errors.h"
#include "wire.h"

/* The DEL spool (spool.ts). Durable before success (docs/design.md, rule 3): the file and its
 * directory entry are fsynced before the plugin exits 0. */

/* Node's fs error text: "ENOENT: no such file or directory, open '/x'" (describe() in main.ts
 * then prefixes the code once more). */
static int fs_error(struct buf *why, int e, const char *syscall, const char *path, const char *path2) {
  put_str(why, errno_name(e)), put_str(why, ": "), put_str(why, errno_name(e)), put_str(why, ": ");
  put_errno_text(why, e), put_str(why, ", "), put_str(why, syscall);
  if (path) put_str(why, " '"), put_str(why, path), put_char(why, '\'');
  if (path2) put_str(why, " -> '"), put_str(why, path2), put_char(why, '\'');
  return -1;
}

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* mkdirSync(dir, {recursive: true, mode: 0o700}): create missing parents, report the error
 * against the whole path as Node does. Iterative, so a long path cannot exhaust the stack. */
static int mkdir_p(char *path) {
  size_t len = strlen(path), end = len;
  bool descending = false;
  for (;;) {
    char saved = path[end];
    path[end] = 0;
    int r = mkdir(path, 0700), e = errno;
    bool ok = r == 0 || (e == EEXIST && is_dir(path));
    path[end] = saved;
    if (ok) {
      if (end == len) return 0;
      descending = true; /* go down one component */
      while (end < len && path[end] == '/') end++;
      while (end < len && path[end] != '/') end++;
    } else if (e == ENOENT && !descending) { /* go up to the parent (never up again once going down) */
      size_t up = end;
      while (up > 0 && path[up - 1] == '/') up--;
      while (up > 0 && path[up - 1] != '/') up--;
      while (up > 1 && path[up - 1] == '/') up--;
      if (up == 0) return ENOENT;
      end = up;
    } else {
      return e;
    }
  }
}

static char spool_dir_store[TEXT_MAX + 1];
static char spool_temp[TEXT_MAX + 128];
static char spool_final[TEXT_MAX + 128];

int spool_del(const char *dir_in, const char *data, size_t len, struct buf *why) {
  char *dir = spool_dir_store;
  snprintf(dir, sizeof spool_dir_store, "%s", dir_in);
  wtf8_to_utf8(dir, strlen(dir));
  struct timespec wall, mono;
  clock_gettime(CLOCK_REALTIME, &wall);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  uint32_t tag = 0;
  if (getrandom(&tag, sizeof tag, 0) != sizeof tag) tag = (uint32_t)mono.tv_nsec ^ (uint32_t)getpid() << 16;
  /* spoolFileName(): names sort in arrival order (wall ms, then the host-wide monotonic ns),
   * and pid + random tag keep two plugins from ever picking the same name */
  char name[96];
  snprintf(name, sizeof name, "%015lld-%020llu-%d-%08x" SPOOL_FILE_SUFFIX,
           (long long)wall.tv_sec * 1000 + wall.tv_nsec / 1000000,
           (unsigned long long)mono.tv_sec * 1000000000ull + (unsigned long long)mono.tv_nsec, (int)getpid(), tag);
  const char *sep = dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/";
  snprintf(spool_final, sizeof spool_final, "%s%s%s", dir, sep, name);
  snprintf(spool_temp, sizeof spool_temp, "%s%s" SPOOL_TEMP_PREFIX "%s", dir, sep, name);

  int e = mkdir_p(dir);
  if (e) return fs_error(why, e, "mkdir", dir, NULL);
  /* the temp name starts with SPOOL_TEMP_PREFIX so a draining agent skips half-written files */
  int fd = open(spool_temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return fs_error(why, errno, "open", spool_temp, NULL);
  for (size_t off = 0; off < len;) {
    ssize_t w = write(fd, data + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      e = w < 0 ? errno : EIO;
      close(fd), unlink(spool_temp);
      return fs_error(why, e, "write", NULL, NULL);
    }
    off += (size_t)w;
  }
  if (fsync(fd) != 0) {
    e = errno;
    close(fd), unlink(spool_temp);
    return fs_error(why, e, "fsync", NULL, NULL);
  }
  close(fd);
  if (rename(spool_temp, spool_final) != 0) {
    e = errno;
    unlink(spool_temp);
    return fs_error(why, e, "rename", spool_temp, spool_final);
  }
  /* the rename is durable only once the directory itself is fsynced */
  int dfd = open(dir, O_RDONLY | O_CLOEXEC);
  if (dfd < 0) return fs_error(why, errno, "open", dir, NULL);
  if (fsync(dfd) != 0) {
    e = errno;
    close(dfd);
    return fs_error(why, e, "fsync", NULL, NULL);
  }
  close(dfd);
  return 0;
}
