/* Entering a request's network namespace, and coming back. Only the calling thread moves. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "helper.h"

const char *node_netns_path;
int own_ns_fd = -1;

/* Opens a path that must name a network namespace; -1 with `reason` otherwise. */
int open_netns(const char *path, char *reason, size_t len) {
  /* O_NONBLOCK: a FIFO at that path must be refused, not hold a worker forever. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    snprintf(reason, len, "cannot open network namespace %s: %s", path, strerror(errno));
    return -1;
  }
  int type = ioctl(fd, NS_GET_NSTYPE);
  if (type != CLONE_NEWNET) {
    snprintf(reason, len, "%s is not a network namespace", path);
    close(fd);
    return -1;
  }
  return fd;
}

/* Moves this thread into `path` (NULL: stays home). -1 with `reason` when it cannot. */
int enter(const char *path, char *reason, size_t len) {
  if (path == NULL) return 0;
  int fd = open_netns(path, reason, len);
  if (fd < 0) return -1;
  if (setns(fd, CLONE_NEWNET) < 0) {
    snprintf(reason, len, "cannot enter network namespace %s: %s", path, strerror(errno));
    close(fd);
    return -1;
  }
  close(fd);
  return 0;
}

void leave(const char *path) {
  if (path == NULL) return;
  if (setns(own_ns_fd, CLONE_NEWNET) < 0) die("cannot return to its own network namespace");
}

/* The request's namespace: a pod's path, or the node's (NULL when that is the helper's own). */
const char *target_of(const struct request *q) { return q->path != NULL ? q->path : node_netns_path; }

