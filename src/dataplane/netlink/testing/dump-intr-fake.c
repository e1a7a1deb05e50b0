/*
 * Test driver for the helper's dump retry (rtnl.c, dump.c, nft-set.c): linked with
 * `-Wl,--wrap=sendto -Wl,--wrap=recv`, so every netlink request the helper's code sends goes to the
 * fake kernel below instead, which answers each dump with nothing and marks the first N of them
 * interrupted (NLM_F_DUMP_INTR), as the kernel does when the objects change during a dump.
 *
 *   dump-intr-fake node|pod|nft N done|data
 *
 * `done` puts the mark on the NLMSG_DONE message, `data` on an object sent before it (a link, for
 * link dumps; other dumps get the mark on NLMSG_DONE). Prints one JSON line: the read's result,
 * how many dump requests the fake answered, and the error text.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "../native/dump.h"
#include "../native/jbuf.h"
#include "../native/nft-set.h"
#include "../native/rtnl.h"

static int interrupt_first;
static int mark_data;
static int dumps;
static int link_dumps;

/* The one answer waiting to be read (every request here is answered whole before the next). */
static char pending[4096];
static size_t pending_len;

static struct nlmsghdr *append(uint16_t type, uint16_t flags, uint32_t seq, size_t payload) {
  struct nlmsghdr *h = (struct nlmsghdr *)(pending + pending_len);
  memset(h, 0, NLMSG_SPACE(payload));
  h->nlmsg_len = NLMSG_LENGTH(payload);
  h->nlmsg_type = type;
  h->nlmsg_flags = flags;
  h->nlmsg_seq = seq;
  pending_len += NLMSG_SPACE(payload);
  return h;
}

/* A loopback link, as a link dump sends it. */
static void append_link(uint32_t seq, uint16_t flags) {
  const char name[] = "lo";
  size_t attr = RTA_SPACE(sizeof name);
  struct nlmsghdr *h = append(RTM_NEWLINK, NLM_F_MULTI | flags, seq, NLMSG_ALIGN(sizeof(struct ifinfomsg)) + attr);
  struct ifinfomsg *ifi = NLMSG_DATA(h);
  ifi->ifi_index = 1;
  struct rtattr *a = (struct rtattr *)((char *)ifi + NLMSG_ALIGN(sizeof *ifi));
  a->rta_type = IFLA_IFNAME;
  a->rta_len = RTA_LENGTH(sizeof name);
  memcpy(RTA_DATA(a), name, sizeof name);
}

ssize_t __real_sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to, socklen_t tolen);
ssize_t __wrap_sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to, socklen_t tolen) {
  (void)fd, (void)flags, (void)to, (void)tolen;
  const struct nlmsghdr *req = buf;
  pending_len = 0;
  if (!(req->nlmsg_flags & NLM_F_DUMP)) {
    /* A get of one object: the fake namespace has none. */
    struct nlmsghdr *h = append(NLMSG_ERROR, 0, req->nlmsg_seq, sizeof(struct nlmsgerr));
    ((struct nlmsgerr *)NLMSG_DATA(h))->error = -ENODEV;
    return (ssize_t)len;
  }
  dumps++;
  uint16_t mark = dumps <= interrupt_first ? NLM_F_DUMP_INTR : 0;
  if (req->nlmsg_type == RTM_GETLINK) {
    link_dumps++;
    if (mark_data) {
      append_link(req->nlmsg_seq, mark);
      mark = 0;
    } else {
      append_link(req->nlmsg_seq, 0);
    }
  }
  struct nlmsghdr *done = append(NLMSG_DONE, NLM_F_MULTI | mark, req->nlmsg_seq, sizeof(int));
  *(int *)NLMSG_DATA(done) = 0;
  return (ssize_t)len;
}

ssize_t __real_recv(int fd, void *buf, size_t len, int flags);
ssize_t __wrap_recv(int fd, void *buf, size_t len, int flags) {
  (void)fd, (void)flags;
  if (pending_len == 0 || pending_len > len) {
    errno = EAGAIN;
    return -1;
  }
  memcpy(buf, pending, pending_len);
  size_t n = pending_len;
  pending_len = 0;
  return (ssize_t)n;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: dump-intr-fake node|pod|nft N done|data\n");
    return 2;
  }
  interrupt_first = atoi(argv[2]);
  mark_data = strcmp(argv[3], "data") == 0;
  char msg[256] = "";
  int rc;
  if (strcmp(argv[1], "nft") == 0) {
    struct in_addr ips[4];
    size_t n = 0;
    rc = nft_set_list("vpcnet", "snat_pods", ips, 4, &n);
    if (rc < 0) snprintf(msg, sizeof msg, "%s", strerror(-rc));
  } else {
    struct rtnl r;
    rc = rtnl_open(&r);
    if (rc < 0) {
      fprintf(stderr, "cannot open a netlink socket: %s\n", strerror(-rc));
      return 1;
    }
    struct jbuf b;
    jbuf_init(&b);
    rc = dump_namespace(&r, &b, strcmp(argv[1], "pod") == 0, NULL, msg, sizeof msg);
    jbuf_free(&b);
    rtnl_close(&r);
  }
  struct jbuf out;
  jbuf_init(&out);
  jbuf_printf(&out, "{\"rc\":%d,\"dumps\":%d,\"linkDumps\":%d,\"message\":", rc, dumps, link_dumps);
  /* An attempt that was interrupted leaves its words behind; they matter only when all were. */
  jbuf_str(&out, rc < 0 ? msg : "");
  jbuf_raw(&out, "}");
  printf("%s\n", out.data);
  jbuf_free(&out);
  return 0;
}
