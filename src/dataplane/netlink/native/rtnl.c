/* rtnetlink requests without a library: build a message, send it, read the ack or the dump. */
#define _GNU_SOURCE
#include "rtnl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A dump answer of many links or routes arrives in pieces of up to a page or so each. */
#define RTNL_RECV_MAX 65536

/* Headers older than 4.20, whose kernels have no strict checking (nor honour dump filters). */
#ifndef NETLINK_GET_STRICT_CHK
#define NETLINK_GET_STRICT_CHK 12
#endif

int rtnl_open(struct rtnl *r) {
  r->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (r->fd < 0) return -errno;
  r->seq = 1;
  struct sockaddr_nl local = {.nl_family = AF_NETLINK};
  if (bind(r->fd, (struct sockaddr *)&local, sizeof local) < 0) {
    int e = errno;
    close(r->fd);
    r->fd = -1;
    return -e;
  }
  int one = 1;
  /* Acks without a copy of the request (smaller answers), with the kernel's reason when it has one. */
  setsockopt(r->fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof one);
  setsockopt(r->fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof one);
  r->why[0] = '\0';
  return 0;
}

void rtnl_close(struct rtnl *r) {
  if (r->fd >= 0) close(r->fd);
  r->fd = -1;
}

static void *tail(struct rtnl_msg *m) { return m->u.bytes + NLMSG_ALIGN(m->u.hdr.nlmsg_len); }

/* Overflow is a programming error (every message here is far below the bound): stop at once. */
static void need(struct rtnl_msg *m, size_t len) {
  if (NLMSG_ALIGN(m->u.hdr.nlmsg_len) + len > RTNL_MSG_MAX) abort();
}

void *rtnl_start(struct rtnl_msg *m, uint16_t type, uint16_t flags, const void *family_hdr, size_t len) {
  memset(m, 0, sizeof *m);
  m->u.hdr.nlmsg_len = NLMSG_LENGTH(len);
  m->u.hdr.nlmsg_type = type;
  m->u.hdr.nlmsg_flags = NLM_F_REQUEST | flags;
  void *fh = NLMSG_DATA(&m->u.hdr);
  memcpy(fh, family_hdr, len);
  return fh;
}

void rtnl_attr(struct rtnl_msg *m, uint16_t type, const void *data, size_t len) {
  need(m, NLA_HDRLEN + NLA_ALIGN(len));
  struct nlattr *a = tail(m);
  a->nla_type = type;
  a->nla_len = (uint16_t)(NLA_HDRLEN + len);
  if (len > 0) memcpy((char *)a + NLA_HDRLEN, data, len);
  m->u.hdr.nlmsg_len = NLMSG_ALIGN(m->u.hdr.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

void rtnl_attr_u16(struct rtnl_msg *m, uint16_t type, uint16_t v) { rtnl_attr(m, type, &v, sizeof v); }
void rtnl_attr_u32(struct rtnl_msg *m, uint16_t type, uint32_t v) { rtnl_attr(m, type, &v, sizeof v); }
void rtnl_attr_str(struct rtnl_msg *m, uint16_t type, const char *s) { rtnl_attr(m, type, s, strlen(s) + 1); }

struct nlattr *rtnl_nest_begin(struct rtnl_msg *m, uint16_t type) {
  struct nlattr *a = tail(m);
  rtnl_attr(m, type | NLA_F_NESTED, NULL, 0);
  return a;
}

void rtnl_nest_end(struct rtnl_msg *m, struct nlattr *nest) {
  nest->nla_len = (uint16_t)((char *)tail(m) - (char *)nest);
}

void *rtnl_reserve(struct rtnl_msg *m, size_t len) {
  need(m, NLMSG_ALIGN(len));
  void *p = tail(m);
  memset(p, 0, NLMSG_ALIGN(len));
  m->u.hdr.nlmsg_len = NLMSG_ALIGN(m->u.hdr.nlmsg_len) + NLMSG_ALIGN(len);
  return p;
}

static int send_msg(struct rtnl *r, struct rtnl_msg *m) {
  m->u.hdr.nlmsg_seq = ++r->seq;
  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  ssize_t n;
  do {
    n = sendto(r->fd, m->u.bytes, m->u.hdr.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof kernel);
  } while (n < 0 && errno == EINTR);
  return n < 0 ? -errno : 0;
}

/* NLMSGERR_ATTR_MSG of an error, after the (capped) copy of the request. */
static void extended_ack(struct rtnl *r, const struct nlmsghdr *h) {
  r->why[0] = '\0';
  if (!(h->nlmsg_flags & NLM_F_ACK_TLVS)) return;
  const struct nlmsgerr *e = NLMSG_DATA(h);
  size_t off = sizeof *e;
  if (!(h->nlmsg_flags & NLM_F_CAPPED)) off += e->msg.nlmsg_len - sizeof e->msg;
  if (NLMSG_LENGTH(off) > h->nlmsg_len) return;
  size_t left = h->nlmsg_len - NLMSG_LENGTH(off);
  const struct nlattr *a = (const struct nlattr *)((const char *)e + NLMSG_ALIGN(off));
  while (left >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN && a->nla_len <= left) {
    if ((a->nla_type & NLA_TYPE_MASK) == NLMSGERR_ATTR_MSG) {
      size_t n = a->nla_len - NLA_HDRLEN;
      if (n >= sizeof r->why) n = sizeof r->why - 1;
      memcpy(r->why, (const char *)a + NLA_HDRLEN, n);
      r->why[n] = '\0';
      return;
    }
    size_t step = NLA_ALIGN(a->nla_len);
    if (step >= left) break;
    left -= step;
    a = (const struct nlattr *)((const char *)a + step);
  }
}

/* Reads answers to `seq` until its ack or end of dump; messages of other sequence numbers are stale.
   A failing `each` ends the reading at once: what the kernel still has to send is not read. */
static int receive(struct rtnl *r, uint32_t seq, rtnl_each each, void *ctx, int dump) {
  char *buf = malloc(RTNL_RECV_MAX);
  if (buf == NULL) return -ENOMEM;
  int result = 0;
  for (;;) {
    ssize_t n = recv(r->fd, buf, RTNL_RECV_MAX, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      result = -errno;
      break;
    }
    if (n == 0) {
      result = -EPIPE;
      break;
    }
    int finished = 0;
    size_t left = (size_t)n;
    for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_seq != seq) continue;
      /* The namespace changed while it was dumped, so the answer may lack objects or hold stale
         ones: the caller dumps it again. The kernel may mark any message of the dump, its
         NLMSG_DONE included (a change after the last object was sent). */
      if (dump && (h->nlmsg_flags & NLM_F_DUMP_INTR) && result == 0) result = -EINTR;
      if (h->nlmsg_type == NLMSG_ERROR) {
        const struct nlmsgerr *e = NLMSG_DATA(h);
        result = e->error;
        if (result < 0) extended_ack(r, h);
        finished = 1;
        break;
      }
      if (h->nlmsg_type == NLMSG_DONE) {
        /* A dump that failed midway carries the error after the header. */
        if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(int))) {
          int err = *(const int *)NLMSG_DATA(h);
          if (err < 0) result = err;
        }
        finished = 1;
        break;
      }
      if (each != NULL) {
        int rc = each(h, ctx);
        if (rc < 0) {
          result = rc;
          finished = 1;
          break;
        }
      }
    }
    if (finished) break;
  }
  free(buf);
  return result;
}

int rtnl_talk(struct rtnl *r, struct rtnl_msg *m) {
  m->u.hdr.nlmsg_flags |= NLM_F_ACK;
  r->why[0] = '\0';
  int rc = send_msg(r, m);
  if (rc < 0) return rc;
  return receive(r, r->seq, NULL, NULL, 0);
}

int rtnl_get(struct rtnl *r, struct rtnl_msg *m, rtnl_each each, void *ctx) {
  m->u.hdr.nlmsg_flags |= NLM_F_ACK;
  r->why[0] = '\0';
  int rc = send_msg(r, m);
  if (rc < 0) return rc;
  return receive(r, r->seq, each, ctx, 0);
}

int rtnl_strict_check(struct rtnl *r) {
  int one = 1;
  return setsockopt(r->fd, SOL_NETLINK, NETLINK_GET_STRICT_CHK, &one, sizeof one) < 0 ? -errno : 0;
}

int rtnl_dump(struct rtnl *r, struct rtnl_msg *m, rtnl_each each, void *ctx) {
  m->u.hdr.nlmsg_flags |= NLM_F_DUMP;
  int rc = send_msg(r, m);
  if (rc < 0) return rc;
  return receive(r, r->seq, each, ctx, 1);
}
