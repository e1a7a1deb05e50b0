/* The primitive kernel operations (src/plan/kernel-op.ts) as rtnetlink requests. */
#ifndef VPCNET_NETLINK_OPS_H
#define VPCNET_NETLINK_OPS_H

#include <stddef.h>

#include "rtnl.h"

/*
 * Runs one operation line (its wire form, src/dataplane/netlink/wire.ts) on `r`'s namespace.
 * `node_ns_fd` is the node's namespace, where a veth's peer is created. 0, or -1 with `msg` set
 * in ip's words ("RTNETLINK answers: File exists", "Cannot find device \"x\"").
 */
int run_op(struct rtnl *r, char *line, int node_ns_fd, char *msg, size_t msglen);

#endif
