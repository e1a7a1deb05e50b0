/* What the parts of bin/vpcnet-netlink share: a request as read from the agent, the answers
   written back, and how a worker enters a request's namespace (main.c names the files). */
#ifndef VPCNET_NETLINK_HELPER_H
#define VPCNET_NETLINK_HELPER_H

#include <stdbool.h>
#include <stddef.h>

#include "jbuf.h"

struct read_scope;

#define MSG_MAX 512
/* Longest nftables table or set name (NFT_NAME_MAXLEN is 256 with its NUL). */
#define NFT_NAME 256

enum request_kind { RUN, READ, NFT_SET, PLAN };

struct request {
  struct request *next;
  enum request_kind kind;
  bool all;
  unsigned long long id;
  /* NULL: the node's namespace. */
  char *path;
  int nops;
  char **ops;
  /* NFT_SET: which set to list. */
  char table[NFT_NAME], set[NFT_NAME];
  /* PLAN: runs ('stop' mode) carried out in turn. */
  int nparts;
  struct request **parts;
  /* READ of a pod: what of its namespace (NULL: all of it, up to the bound). */
  struct read_scope *scope;
};

/* main.c: `n` hex digits (lower case) into n/2 bytes; -1 for anything else, or a NUL byte. */
int unhex(const char *hex, size_t n, char *out);

/* answer.c */
_Noreturn void die(const char *what);
void answer(struct jbuf *b);
void answer_unentered(unsigned long long id, const char *reason);

/* netns.c: the node's namespace when it is not the helper's own (--node-netns), and the helper's. */
extern const char *node_netns_path;
extern int own_ns_fd;
int open_netns(const char *path, char *reason, size_t len);
int enter(const char *path, char *reason, size_t len);
void leave(const char *path);
const char *target_of(const struct request *q);

/* requests.c: what a worker does with one request (it answers it). */
void run_request(struct request *q);
void plan_request(struct request *q);
void read_request(struct request *q);
void nft_set_request(struct request *q);

#endif
