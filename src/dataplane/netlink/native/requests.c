/* What a worker does with one request: run its operations, read its namespace, or list a set. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dump.h"
#include "helper.h"
#include "nft-set.h"
#include "ops.h"
#include "rtnl.h"

/* Enough for any node: a set element per pod address. */
#define MAX_SET_ELEMENTS 65536

/*
 * In a removal ('all' mode) consecutive deletions of SNAT elements of one set go in one nf_tables
 * transaction (nft_set_remove): one message round for a burst's elements, and a missing element is
 * no error there. Returns how many operations from `from` it
 * removed; 0 when ops[from] starts no such run, or when the transaction failed (then each
 * operation runs alone and reports its own error).
 */
static int snat_removals(char **ops, int from, int nops) {
  char table[NFT_NAME], set[NFT_NAME], t[NFT_NAME], s[NFT_NAME], ip[INET_ADDRSTRLEN];
  if (sscanf(ops[from], "snatDel %255s %255s %15s", table, set, ip) != 3) return 0;
  int n = 0;
  while (from + n < nops && sscanf(ops[from + n], "snatDel %255s %255s %15s", t, s, ip) == 3 &&
         strcmp(t, table) == 0 && strcmp(s, set) == 0)
    n++;
  struct in_addr *ips = malloc((size_t)n * sizeof *ips);
  if (ips == NULL) die("out of memory");
  for (int i = 0; i < n; i++) {
    if (sscanf(ops[from + i], "snatDel %*s %*s %15s", ip) != 1 || inet_pton(AF_INET, ip, &ips[i]) != 1) {
      free(ips);
      return 0;
    }
  }
  int rc = nft_set_remove(table, set, ips, (size_t)n);
  free(ips);
  return rc == 0 ? n : 0;
}

/* Enters the request's namespace and opens rtnetlink there; when it cannot, says why in `reason`
   (back home first) and returns -1. */
static int enter_rtnl_or_say(const struct request *q, struct rtnl *r, char *reason, size_t len) {
  const char *target = target_of(q);
  if (enter(target, reason, len) < 0) return -1;
  int rc = rtnl_open(r);
  if (rc < 0) {
    snprintf(reason, len, "cannot open rtnetlink in %s: %s", target ? target : "the node namespace", strerror(-rc));
    leave(target);
    return -1;
  }
  return 0;
}

/* Enters the request's namespace and opens rtnetlink there; when it cannot, answers the request as
   not entered and returns -1. */
static int enter_rtnl(const struct request *q, struct rtnl *r) {
  char reason[MSG_MAX];
  if (enter_rtnl_or_say(q, r, reason, sizeof reason) < 0) {
    answer_unentered(q->id, reason);
    return -1;
  }
  return 0;
}

/*
 * Runs one run's operations in its namespace and writes its outcome into `b` as the fields
 * `"entered":true,"failures":[...]` or `"entered":false,"reason":"..."`. Returns 1 when the run
 * stopped short (not entered, or a failure in 'stop' mode), else 0.
 */
static int run_ops(const struct request *q, struct jbuf *b) {
  char reason[MSG_MAX];
  const char *target = target_of(q);
  /* A veth's peer goes to the node's namespace: the helper's own, or --node-netns. */
  int node_fd = own_ns_fd;
  struct rtnl r;
  if (node_netns_path != NULL) node_fd = open_netns(node_netns_path, reason, sizeof reason);
  if (node_fd < 0 || enter_rtnl_or_say(q, &r, reason, sizeof reason) < 0) {
    if (node_fd >= 0 && node_fd != own_ns_fd) close(node_fd);
    jbuf_raw(b, "\"entered\":false,\"reason\":");
    jbuf_str(b, reason);
    return 1;
  }
  jbuf_raw(b, "\"entered\":true,\"failures\":[");
  int failures = 0;
  for (int i = 0; i < q->nops; i++) {
    char msg[MSG_MAX];
    if (q->all) {
      int done = snat_removals(q->ops, i, q->nops);
      if (done > 0) {
        i += done - 1;
        continue;
      }
    }
    if (run_op(&r, q->ops[i], node_fd, msg, sizeof msg) == 0) continue;
    jbuf_printf(b, "%s{\"index\":%d,\"message\":", failures++ > 0 ? "," : "", i);
    jbuf_str(b, msg);
    jbuf_raw(b, "}");
    if (!q->all) break;
  }
  jbuf_raw(b, "]");
  rtnl_close(&r);
  leave(target);
  if (node_fd != own_ns_fd) close(node_fd);
  return failures > 0 && !q->all;
}

void run_request(struct request *q) {
  struct jbuf b;
  jbuf_init(&b);
  jbuf_printf(&b, "{\"id\":%llu,", q->id);
  run_ops(q, &b);
  jbuf_raw(&b, "}");
  answer(&b);
  jbuf_free(&b);
}

/* Runs the parts in turn (each in its own namespace), as one request: a pod's side and then the
   node's side of an ADD cost one round trip. The first part that stops short ends the plan. */
void plan_request(struct request *q) {
  struct jbuf b;
  jbuf_init(&b);
  jbuf_printf(&b, "{\"id\":%llu,\"parts\":[", q->id);
  for (int i = 0; i < q->nparts; i++) {
    jbuf_raw(&b, i > 0 ? ",{" : "{");
    int stopped = run_ops(q->parts[i], &b);
    jbuf_raw(&b, "}");
    if (stopped) break;
  }
  jbuf_raw(&b, "]}");
  answer(&b);
  jbuf_free(&b);
}

void read_request(struct request *q) {
  const char *target = target_of(q);
  struct rtnl r;
  if (enter_rtnl(q, &r) < 0) return;
  struct jbuf b;
  jbuf_init(&b);
  jbuf_printf(&b, "{\"id\":%llu,\"entered\":true,", q->id);
  char msg[MSG_MAX];
  int rc = dump_namespace(&r, &b, q->path != NULL, q->scope, msg, sizeof msg);
  if (rc < 0) {
    /* What was read so far goes: a refused read keeps nothing. */
    jbuf_free(&b);
    jbuf_printf(&b, "{\"id\":%llu,\"entered\":true,\"%s\":", q->id, rc == DUMP_TOO_LARGE ? "tooLarge" : "error");
    jbuf_str(&b, msg);
  }
  jbuf_raw(&b, "}");
  rtnl_close(&r);
  leave(target);
  answer(&b);
  jbuf_free(&b);
}

/* The elements of an nftables IPv4 set in the request's namespace: `"elements":[...]`, or null when
   the table or set does not exist (SNAT not set up, or external). */
void nft_set_request(struct request *q) {
  char reason[MSG_MAX];
  const char *target = target_of(q);
  if (enter(target, reason, sizeof reason) < 0) {
    answer_unentered(q->id, reason);
    return;
  }
  struct in_addr *ips = malloc(MAX_SET_ELEMENTS * sizeof *ips);
  if (ips == NULL) die("out of memory");
  size_t n = 0;
  int rc = nft_set_list(q->table, q->set, ips, MAX_SET_ELEMENTS, &n);
  leave(target);
  struct jbuf b;
  jbuf_init(&b);
  jbuf_printf(&b, "{\"id\":%llu,\"entered\":true,", q->id);
  if (rc == -ENOENT) {
    jbuf_raw(&b, "\"elements\":null}");
  } else if (rc < 0 || n > MAX_SET_ELEMENTS) {
    const char *why = rc == -EINTR   ? "the set kept changing during every dump"
                      : rc < 0         ? strerror(-rc)
                                       : "more elements than a node can have";
    snprintf(reason, sizeof reason, "cannot list nftables set %.64s %.64s: %s", q->table, q->set, why);
    jbuf_raw(&b, "\"error\":");
    jbuf_str(&b, reason);
    jbuf_raw(&b, "}");
  } else {
    jbuf_raw(&b, "\"elements\":[");
    for (size_t i = 0; i < n; i++) {
      char text[INET_ADDRSTRLEN];
      inet_ntop(AF_INET, &ips[i], text, sizeof text);
      jbuf_printf(&b, "%s\"%s\"", i > 0 ? "," : "", text);
    }
    jbuf_raw(&b, "]}");
  }
  free(ips);
  answer(&b);
  jbuf_free(&b);
}

