/*
 * Why the node's nfnetlink socket stays open: closing one makes nf_tables flush its deferred frees
 * (a synchronize_rcu, ~13 ms here) while it holds the namespace's commit mutex (nft_rcv_nl_event
 * on NETLINK_URELEASE), and every device unregistered in that namespace takes the same mutex under
 * RTNL (nf_tables_netdev_event). So each SNAT removal that closed its socket stalled the node's
 * link deletions, and with them everything waiting for RTNL: measured through the helper, 50 DELs
 * with SNAT removals between them took ~300 ms instead of ~50 ms. The transaction itself does not
 * wait for the grace period; its frees happen later, in a workqueue, without that mutex.
 *
 * Only the node's namespace: a kept socket holds its namespace alive, which must never happen to a
 * pod's. One socket per worker thread: no lock, and nf_tables serializes transactions anyway.
 */
#define _GNU_SOURCE
#include "nfnl-socket.h"

#include <errno.h>
#include <linux/netlink.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

static bool keep_known;
static dev_t keep_dev;
static ino_t keep_ino;

/* The fd plus one, so that a thread starts (zero-initialised) with none. */
static __thread struct {
  int fd_plus_one;
  unsigned next_seq;
} kept;

void nfnl_keep_in(int ns_fd) {
  struct stat st;
  if (fstat(ns_fd, &st) < 0) return;
  keep_dev = st.st_dev;
  keep_ino = st.st_ino;
  keep_known = true;
}

static bool in_kept_namespace(void) {
  struct stat st;
  if (!keep_known || stat("/proc/thread-self/ns/net", &st) < 0) return false;
  return st.st_dev == keep_dev && st.st_ino == keep_ino;
}

static int new_socket(void) {
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
  if (fd < 0) return -errno;
  /* A kernel that never answers must not hold a worker forever. */
  struct timeval tv = {.tv_sec = 5, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

int nfnl_open(struct nfnl_socket *s, unsigned count, unsigned *seq) {
  s->kept = in_kept_namespace();
  if (!s->kept) {
    s->fd = new_socket();
    *seq = 1;
    return s->fd < 0 ? s->fd : 0;
  }
  if (kept.fd_plus_one == 0) {
    int fd = new_socket();
    if (fd < 0) return fd;
    kept.fd_plus_one = fd + 1;
    kept.next_seq = 1;
  }
  s->fd = kept.fd_plus_one - 1;
  *seq = kept.next_seq;
  kept.next_seq += count;
  return 0;
}

void nfnl_release(struct nfnl_socket *s, bool ok) {
  if (s->fd < 0) return;
  if (s->kept && ok) return;
  close(s->fd);
  if (s->kept) kept.fd_plus_one = 0;
  s->fd = -1;
}
