/* A namespace read back as `ip -d -j` prints it (only the keys src/dataplane/ip-cli/ip-json.ts reads). */
#ifndef VPCNET_NETLINK_DUMP_H
#define VPCNET_NETLINK_DUMP_H

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

#include "jbuf.h"
#include "rtnl.h"

/*
 * What of a pod's namespace a read covers (src/dataplane/pod-scope.ts): links by name, with their
 * addresses and neighbours; the routes of a table through one of those links; rules at a priority.
 * A plan names a few of each.
 */
#define SCOPE_MAX 16
struct read_scope {
  int nlinks;
  char links[SCOPE_MAX][IFNAMSIZ];
  int nroutes;
  struct {
    uint32_t table;
    char dev[IFNAMSIZ];
  } routes[SCOPE_MAX];
  int nrules;
  uint32_t priorities[SCOPE_MAX];
};

/* " scope" and its items (`link:<hex name>`, `route:<table>:<hex name>`, `rule:<priority>`) into a
   new scope; -1 when the text is not that. */
int read_scope_parse(const char *text, struct read_scope **out);

/*
 * A pod's namespace is read up to this many objects of a kind (routes of one table through one
 * link, rules, ...): the pod controls what is there, and a read that holds more is refused rather
 * than buffered and handed to the agent. vpcnet makes a few of each.
 */
#define POD_READ_BOUND 10000

/* false (--no-strict-check): requests are not checked strictly, as on kernels before 4.20, whose
   dumps ignore filters; the helper's own filtering then does all the work (tests). */
extern bool dump_strict_check;

enum { DUMP_FAILED = -1, DUMP_TOO_LARGE = -2 };

/*
 * Appends `"links":[...],"routes":[...],"rules":[...],"neighbours":[...],"received":{...}` for the
 * namespace of `r` (neighbours only for a pod). A pod's namespace is read within `scope` when
 * given, and up to POD_READ_BOUND objects of a kind. 0; DUMP_FAILED with `msg` naming the dump that
 * failed; DUMP_TOO_LARGE with `msg` saying what the namespace holds too much of. A namespace that
 * keeps changing under the dumps is read again a few times first.
 */
int dump_namespace(struct rtnl *r, struct jbuf *out, bool pod, const struct read_scope *scope, char *msg,
                   size_t msglen);

#endif
