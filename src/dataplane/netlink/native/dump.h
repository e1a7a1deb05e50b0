/* A namespace read back as `ip -d -j` prints it (only the keys src/dataplane/linux/ip-json.ts reads). */
#ifndef VPCNET_NETLINK_DUMP_H
#define VPCNET_NETLINK_DUMP_H

#include "jbuf.h"
#include "rtnl.h"

/*
 * Appends `"links":[...],"routes":[...],"rules":[...],"neighbours":[...]` for the namespace of `r`
 * (neighbours only when `with_neighbours`). 0, or -1 with `msg` naming the dump that failed; a
 * namespace that keeps changing under the dumps is read again a few times first.
 */
int dump_namespace(struct rtnl *r, struct jbuf *out, int with_neighbours, char *msg, size_t msglen);

#endif
