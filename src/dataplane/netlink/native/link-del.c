/*
 * A link deletion answered when the kernel announces it, not when it acknowledges it.
 *
 * Why: the kernel multicasts RTM_DELLINK on RTNLGRP_LINK as soon as it has unregistered the
 * device under RTNL, but the deleting sendmsg returns (and the ack comes) only after it has waited
 * for RCU and for the device's last references (netdev_run_todo), many times longer
 * (`ip -ts monitor link` beside `ip link del` of a veth shows both). By the announcement the device
 * is unlisted (its name and index are free), its routes are flushed and a veth's peer is unlisted
 * too; what is left is the kernel freeing memory, which a DEL need not wait for.
 *
 * So the worker subscribes to link announcements in the request's namespace, and a "finisher"
 * thread sends the request on a socket of its own (a socket stays in the namespace it was made in,
 * whichever thread uses it) and waits for the ack. The worker takes whichever comes first: the
 * announcement for that ifindex (success), or the finisher's result (an error before any
 * announcement is the operation's error). After an announcement the worker goes on and
 * the finisher's result, which can then only be success, is dropped.
 *
 * Never success without evidence: when the announcements cannot be watched (no socket, an overrun,
 * anything unclear), the ack decides. When no finisher can be started (or 256 are outstanding),
 * the worker sends and waits for the ack itself.
 */
#define _GNU_SOURCE
#include "link-del.h"

#include <errno.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

/* A burst of DELs is 50 or so; the bound only keeps a runaway from making threads without end. */
#define MAX_FINISHERS 256
/* A finisher's frame is small: the message lives in `struct deletion`, the receive buffer on the heap. */
#define FINISHER_STACK (64 * 1024)
/* Room for many link announcements while the worker is slow to read (each is 1-2 KiB of a busy
   namespace's traffic); past it the socket overruns and the ack decides. */
#define ANNOUNCE_RCVBUF (1024 * 1024)
/* One announcement is a few KiB; a read takes what fits and the rest stays queued. */
#define ANNOUNCE_BUF 65536

/* What the worker and its finisher share; the last of the two to let go frees it. */
struct deletion {
  pthread_mutex_t lock;
  pthread_cond_t finished;
  int refs;
  bool done;
  /* The finisher's result, valid once `done`: 0 or -errno, with the kernel's reason in r.why. */
  int rc;
  /* Signalled (and `finished` too) by the finisher once its result is in: the worker polls it
     beside the announcements. */
  int done_fd;
  /* The finisher's socket, made by the worker inside the request's namespace. */
  struct rtnl r;
  struct rtnl_msg m;
};

static pthread_mutex_t finishers_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t finishers_gone = PTHREAD_COND_INITIALIZER;
static int finishers;

static bool take_finisher_slot(void) {
  pthread_mutex_lock(&finishers_lock);
  bool ok = finishers < MAX_FINISHERS;
  if (ok) finishers++;
  pthread_mutex_unlock(&finishers_lock);
  return ok;
}

static void give_finisher_slot(void) {
  pthread_mutex_lock(&finishers_lock);
  if (--finishers == 0) pthread_cond_broadcast(&finishers_gone);
  pthread_mutex_unlock(&finishers_lock);
}

void link_del_wait_finishers(void) {
  pthread_mutex_lock(&finishers_lock);
  while (finishers > 0) pthread_cond_wait(&finishers_gone, &finishers_lock);
  pthread_mutex_unlock(&finishers_lock);
}

static void release(struct deletion *d) {
  pthread_mutex_lock(&d->lock);
  bool last = --d->refs == 0;
  pthread_mutex_unlock(&d->lock);
  if (!last) return;
  rtnl_close(&d->r);
  close(d->done_fd);
  pthread_cond_destroy(&d->finished);
  pthread_mutex_destroy(&d->lock);
  free(d);
}

/* The finisher never enters a namespace: its socket already is where the device is. */
static void *finish(void *arg) {
  struct deletion *d = arg;
  int rc = rtnl_talk(&d->r, &d->m);
  pthread_mutex_lock(&d->lock);
  d->rc = rc;
  d->done = true;
  pthread_cond_signal(&d->finished);
  pthread_mutex_unlock(&d->lock);
  uint64_t one = 1;
  /* Cannot fail short of a bug: the counter is far from its limit, the fd open until release. */
  while (write(d->done_fd, &one, sizeof one) < 0 && errno == EINTR) {
  }
  release(d);
  give_finisher_slot();
  return NULL;
}

/* A finisher for `m` with a socket in the current namespace, already sending; NULL when none could
   be started (then nothing was sent). */
static struct deletion *start_finisher(const struct rtnl_msg *m) {
  if (!take_finisher_slot()) return NULL;
  struct deletion *d = calloc(1, sizeof *d);
  if (d == NULL) goto no_slot;
  d->r.fd = -1;
  d->done_fd = eventfd(0, EFD_CLOEXEC);
  if (d->done_fd < 0) goto no_fd;
  if (rtnl_open(&d->r) < 0) goto no_socket;
  pthread_mutex_init(&d->lock, NULL);
  pthread_cond_init(&d->finished, NULL);
  d->refs = 2;
  d->m = *m;
  pthread_attr_t attr;
  pthread_t thread;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, FINISHER_STACK);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  int rc = pthread_create(&thread, &attr, finish, d);
  pthread_attr_destroy(&attr);
  if (rc == 0) return d;
  pthread_cond_destroy(&d->finished);
  pthread_mutex_destroy(&d->lock);
  rtnl_close(&d->r);
no_socket:
  close(d->done_fd);
no_fd:
  free(d);
no_slot:
  give_finisher_slot();
  return NULL;
}

/* A socket subscribed to the current namespace's link announcements; -1 when there is none. */
static int open_announcements(void) {
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
  if (fd < 0) return -1;
  int size = ANNOUNCE_RCVBUF;
  /* FORCE needs CAP_NET_ADMIN, which the helper has; without it, what rmem_max allows. */
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) < 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  struct sockaddr_nl local = {.nl_family = AF_NETLINK, .nl_groups = RTMGRP_LINK};
  if (bind(fd, (struct sockaddr *)&local, sizeof local) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/*
 * Reads what is queued on the announcement socket: 1 when the kernel announced the deletion of
 * `index`, 0 when not (yet), -1 when the announcements can no longer be trusted (an overrun drops
 * messages, a truncated read loses some).
 */
static int deletion_announced(int fd, int index, char *buf) {
  for (;;) {
    struct sockaddr_nl from;
    socklen_t fromlen = sizeof from;
    ssize_t n = recvfrom(fd, buf, ANNOUNCE_BUF, MSG_TRUNC, (struct sockaddr *)&from, &fromlen);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    if (n <= 0 || n > ANNOUNCE_BUF) return -1;
    /* Only the kernel's word counts (a privileged process may send to the group too). */
    if (fromlen != sizeof from || from.nl_pid != 0) continue;
    size_t left = (size_t)n;
    for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_type != RTM_DELLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifinfomsg))) continue;
      const struct ifinfomsg *ifi = NLMSG_DATA(h);
      /* AF_BRIDGE deletions announce a port leaving its bridge, not the device going. */
      if (ifi->ifi_family == AF_UNSPEC && ifi->ifi_index == index) return 1;
    }
  }
}

/* 1: announced; 0: the finisher's result is in; -1: watching failed, the finisher's result decides. */
static int first_word(struct deletion *d, int watch, int index) {
  char *buf = malloc(ANNOUNCE_BUF);
  if (buf == NULL) return -1;
  struct pollfd p[2] = {{.fd = d->done_fd, .events = POLLIN}, {.fd = watch, .events = POLLIN}};
  int outcome = -1;
  for (;;) {
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    /* Both at once: the finisher's result first, so an error reads exactly as it did before. */
    if (p[0].revents != 0) {
      outcome = 0;
      break;
    }
    if (p[1].revents != 0) {
      int a = deletion_announced(watch, index, buf);
      if (a != 0) {
        outcome = a;
        break;
      }
    }
  }
  free(buf);
  return outcome;
}

/* Blocks until the finisher's result is in; returns it, with the kernel's reason in r->why. */
static int finisher_result(struct deletion *d, struct rtnl *r) {
  pthread_mutex_lock(&d->lock);
  while (!d->done) pthread_cond_wait(&d->finished, &d->lock);
  int rc = d->rc;
  memcpy(r->why, d->r.why, sizeof r->why);
  pthread_mutex_unlock(&d->lock);
  return rc;
}

int link_del_announced(struct rtnl *r, struct rtnl_msg *m, int index) {
  /* Subscribed before anything is sent, so the announcement cannot be missed. */
  int watch = open_announcements();
  struct deletion *d = watch >= 0 ? start_finisher(m) : NULL;
  if (d == NULL) {
    if (watch >= 0) close(watch);
    return rtnl_talk(r, m);
  }
  int rc;
  if (first_word(d, watch, index) == 1) {
    r->why[0] = '\0';
    rc = 0;
  } else {
    rc = finisher_result(d, r);
  }
  close(watch);
  release(d);
  return rc;
}
