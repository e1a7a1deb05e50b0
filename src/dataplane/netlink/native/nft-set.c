/* nf_tables speaks in batches: BATCH_BEGIN, the change messages, BATCH_END, sent in one datagram; the
   kernel applies the changes as one transaction and acknowledges each message that asked for it. */
#include "nft-set.h"

#include "nfnl-socket.h"

#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Room for the batch: 3 headers plus per element ~40 bytes; callers send few elements at once. */
#define NFT_BUF_SIZE 65536
#define NFT_MAX_ELEMENTS 1000

struct nl_buf {
  char data[NFT_BUF_SIZE];
  size_t len;
};

static void *put(struct nl_buf *b, size_t size) {
  size_t aligned = NLMSG_ALIGN(size);
  if (b->len + aligned > sizeof b->data) return NULL;
  void *at = b->data + b->len;
  memset(at, 0, aligned);
  b->len += aligned;
  return at;
}

static struct nlmsghdr *begin_msg(struct nl_buf *b, unsigned type, unsigned flags, unsigned seq, int family,
                                  unsigned res_id) {
  struct nlmsghdr *h = put(b, NLMSG_HDRLEN);
  struct nfgenmsg *g = put(b, sizeof(struct nfgenmsg));
  if (h == NULL || g == NULL) return NULL;
  h->nlmsg_type = (unsigned short)type;
  h->nlmsg_flags = (unsigned short)flags;
  h->nlmsg_seq = seq;
  g->nfgen_family = (unsigned char)family;
  g->version = NFNETLINK_V0;
  g->res_id = htons((unsigned short)res_id);
  return h;
}

static void end_msg(struct nl_buf *b, struct nlmsghdr *h) { h->nlmsg_len = (unsigned)(b->data + b->len - (char *)h); }

static struct nlattr *put_attr(struct nl_buf *b, unsigned type, const void *value, size_t size) {
  struct nlattr *a = put(b, NLA_HDRLEN + size);
  if (a == NULL) return NULL;
  a->nla_type = (unsigned short)type;
  a->nla_len = (unsigned short)(NLA_HDRLEN + size);
  if (size > 0) memcpy((char *)a + NLA_HDRLEN, value, size);
  return a;
}

static struct nlattr *begin_nest(struct nl_buf *b, unsigned type) { return put_attr(b, type | NLA_F_NESTED, NULL, 0); }

static void end_nest(struct nl_buf *b, struct nlattr *a) { a->nla_len = (unsigned short)(b->data + b->len - (char *)a); }

/* One NEWSETELEM (add) or DELSETELEM message naming the addresses, numbered `seq`. */
static int put_elements(struct nl_buf *b, int add, const char *table, const char *set, const struct in_addr *ips,
                        size_t n, unsigned seq) {
  unsigned type = (NFNL_SUBSYS_NFTABLES << 8) | (add ? NFT_MSG_NEWSETELEM : NFT_MSG_DELSETELEM);
  unsigned flags = NLM_F_REQUEST | NLM_F_ACK | (add ? NLM_F_CREATE : 0);
  struct nlmsghdr *h = begin_msg(b, type, flags, seq, NFPROTO_IPV4, 0);
  if (h == NULL) return -EMSGSIZE;
  if (put_attr(b, NFTA_SET_ELEM_LIST_TABLE, table, strlen(table) + 1) == NULL) return -EMSGSIZE;
  if (put_attr(b, NFTA_SET_ELEM_LIST_SET, set, strlen(set) + 1) == NULL) return -EMSGSIZE;
  struct nlattr *list = begin_nest(b, NFTA_SET_ELEM_LIST_ELEMENTS);
  if (list == NULL) return -EMSGSIZE;
  for (size_t i = 0; i < n; i++) {
    struct nlattr *elem = begin_nest(b, NFTA_LIST_ELEM);
    struct nlattr *key = elem == NULL ? NULL : begin_nest(b, NFTA_SET_ELEM_KEY);
    if (key == NULL || put_attr(b, NFTA_DATA_VALUE, &ips[i].s_addr, sizeof ips[i].s_addr) == NULL) return -EMSGSIZE;
    end_nest(b, key);
    end_nest(b, elem);
  }
  end_nest(b, list);
  end_msg(b, h);
  return 0;
}

/* BATCH_BEGIN (seq), the change messages (seq+1 .. seq+changes), BATCH_END. `steps` lists for each
   change message whether it adds (1) or deletes (0) the addresses. */
static int build(struct nl_buf *b, const int *steps, int changes, const char *table, const char *set,
                 const struct in_addr *ips, size_t n, unsigned seq) {
  struct nlmsghdr *h = begin_msg(b, NFNL_MSG_BATCH_BEGIN, NLM_F_REQUEST, seq, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
  if (h == NULL) return -EMSGSIZE;
  end_msg(b, h);
  for (int i = 0; i < changes; i++) {
    int rc = put_elements(b, steps[i], table, set, ips, n, seq + 1 + (unsigned)i);
    if (rc != 0) return rc;
  }
  h = begin_msg(b, NFNL_MSG_BATCH_END, NLM_F_REQUEST, seq + 1 + (unsigned)changes, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
  if (h == NULL) return -EMSGSIZE;
  end_msg(b, h);
  return 0;
}

/* Waits for the answer to the batch whose messages are numbered first..last: the first error the
   kernel reports for any of them, or 0 once the change message (`ack`) is acknowledged. */
static int await_ack(int fd, unsigned first, unsigned last, unsigned ack) {
  char reply[8192];
  for (;;) {
    ssize_t got = recv(fd, reply, sizeof reply, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    for (struct nlmsghdr *h = (struct nlmsghdr *)reply; NLMSG_OK(h, (unsigned)got); h = NLMSG_NEXT(h, got)) {
      if (h->nlmsg_type != NLMSG_ERROR || h->nlmsg_seq < first || h->nlmsg_seq > last) continue;
      const struct nlmsgerr *e = NLMSG_DATA(h);
      if (e->error != 0 || h->nlmsg_seq == ack) return e->error;
    }
  }
}

/* Sends one transaction of `changes` change messages and waits for the last one's acknowledgement. */
static int transact(const int *steps, int changes, const char *table, const char *set, const struct in_addr *ips,
                    size_t n) {
  if (n == 0) return 0;
  if (n > NFT_MAX_ELEMENTS) return -E2BIG;
  /* On the heap, not in thread-local storage: static TLS is copied into every thread's stack,
     the link-deletion finishers' (link-del.c) included, which are meant to be small. */
  struct nl_buf *buf = malloc(sizeof *buf);
  if (buf == NULL) return -ENOMEM;
  buf->len = 0;
  /* BATCH_BEGIN, the changes, BATCH_END: each message its own number. */
  struct nfnl_socket s;
  unsigned seq;
  int rc = nfnl_open(&s, (unsigned)changes + 2, &seq);
  if (rc == 0) rc = build(buf, steps, changes, table, set, ips, n, seq);
  if (rc == 0) {
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    unsigned last = seq + (unsigned)changes;
    if (sendto(s.fd, buf->data, buf->len, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0) {
      rc = -errno;
    } else {
      rc = await_ack(s.fd, seq, last + 1, last);
    }
  }
  nfnl_release(&s, rc == 0);
  free(buf);
  return rc;
}

int nft_set_elements(int add, const char *table, const char *set, const struct in_addr *ips, size_t n) {
  const int steps[1] = {add ? 1 : 0};
  return transact(steps, 1, table, set, ips, n);
}

int nft_set_remove(const char *table, const char *set, const struct in_addr *ips, size_t n) {
  /* Added first (a no-op for a present element), then deleted: a missing one is no error, and the
     whole removal is one transaction however many addresses. */
  const int steps[2] = {1, 0};
  return transact(steps, 2, table, set, ips, n);
}

/* Walks the attributes of one set-element dump message, counting (and storing up to cap) keys. */
static void collect_elements(const struct nlmsghdr *h, struct in_addr *out, size_t cap, size_t *n) {
  const char *end = (const char *)h + h->nlmsg_len;
  const struct nlattr *a = (const struct nlattr *)((const char *)NLMSG_DATA(h) + NLMSG_ALIGN(sizeof(struct nfgenmsg)));
  for (; (const char *)a + NLA_HDRLEN <= end && a->nla_len >= NLA_HDRLEN; a = (const void *)((const char *)a + NLA_ALIGN(a->nla_len))) {
    if ((a->nla_type & NLA_TYPE_MASK) != NFTA_SET_ELEM_LIST_ELEMENTS) continue;
    const char *lend = (const char *)a + a->nla_len;
    for (const struct nlattr *e = (const void *)((const char *)a + NLA_HDRLEN); (const char *)e + NLA_HDRLEN <= lend && e->nla_len >= NLA_HDRLEN;
         e = (const void *)((const char *)e + NLA_ALIGN(e->nla_len))) {
      const char *eend = (const char *)e + e->nla_len;
      for (const struct nlattr *k = (const void *)((const char *)e + NLA_HDRLEN); (const char *)k + NLA_HDRLEN <= eend && k->nla_len >= NLA_HDRLEN;
           k = (const void *)((const char *)k + NLA_ALIGN(k->nla_len))) {
        if ((k->nla_type & NLA_TYPE_MASK) != NFTA_SET_ELEM_KEY) continue;
        const struct nlattr *v = (const void *)((const char *)k + NLA_HDRLEN);
        if (k->nla_len < 2 * NLA_HDRLEN + 4 || (v->nla_type & NLA_TYPE_MASK) != NFTA_DATA_VALUE || v->nla_len != NLA_HDRLEN + 4) continue;
        if (*n < cap) memcpy(&out[*n].s_addr, (const char *)v + NLA_HDRLEN, 4);
        (*n)++;
      }
    }
  }
}

/* One dump of the set's elements. -EINTR: the kernel marked the dump interrupted (the set changed
   while it was read), so the elements may be incomplete. */
static int list_once(const char *table, const char *set, struct in_addr *out, size_t cap, size_t *n) {
  *n = 0;
  /* A request and a reply buffer, on the heap for the reason transact() gives. */
  struct nl_buf *buf = malloc(sizeof *buf);
  if (buf == NULL) return -ENOMEM;
  buf->len = 0;
  struct nfnl_socket s;
  unsigned seq;
  int rc = nfnl_open(&s, 1, &seq);
  if (rc < 0) {
    free(buf);
    return rc;
  }
  struct nlmsghdr *h = begin_msg(buf, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETSETELEM,
                                 NLM_F_REQUEST | NLM_F_DUMP, seq, NFPROTO_IPV4, 0);
  if (h == NULL || put_attr(buf, NFTA_SET_ELEM_LIST_TABLE, table, strlen(table) + 1) == NULL ||
      put_attr(buf, NFTA_SET_ELEM_LIST_SET, set, strlen(set) + 1) == NULL) {
    nfnl_release(&s, true);
    free(buf);
    return -EMSGSIZE;
  }
  end_msg(buf, h);
  int fd = s.fd;
  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  if (sendto(fd, buf->data, buf->len, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0) rc = -errno;
  /* A large set arrives over several datagrams; NLMSG_DONE ends the dump. The request is sent: its
     buffer takes the reply. */
  char *reply = buf->data;
  bool interrupted = false;
  for (int done = 0; rc == 0 && !done;) {
    ssize_t got = recv(fd, reply, NFT_BUF_SIZE, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      rc = -errno;
      break;
    }
    for (struct nlmsghdr *m = (struct nlmsghdr *)reply; NLMSG_OK(m, (unsigned)got); m = NLMSG_NEXT(m, got)) {
      if (m->nlmsg_seq != seq) continue;
      /* Any message may carry the mark, NLMSG_DONE included. */
      if (m->nlmsg_flags & NLM_F_DUMP_INTR) interrupted = true;
      if (m->nlmsg_type == NLMSG_DONE) {
        done = 1;
        break;
      }
      if (m->nlmsg_type == NLMSG_ERROR) {
        rc = ((const struct nlmsgerr *)NLMSG_DATA(m))->error;
        done = 1;
        break;
      }
      collect_elements(m, out, cap, n);
    }
  }
  /* -ENOENT (no such set) is a whole answer; anything else may leave a dump half read. The dump
     was read to its end when interrupted: the socket can serve the next attempt. */
  nfnl_release(&s, rc == 0 || rc == -ENOENT);
  free(buf);
  return rc == 0 && interrupted ? -EINTR : rc;
}

int nft_set_list(const char *table, const char *set, struct in_addr *out, size_t cap, size_t *n) {
  int rc = -EINTR;
  for (int attempt = 0; attempt < NETLINK_DUMP_ATTEMPTS && rc == -EINTR; attempt++)
    rc = list_once(table, set, out, cap, n);
  return rc;
}
