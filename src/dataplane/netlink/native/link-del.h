/* Deleting a link, answered when the kernel announces the deletion (link-del.c says why). */
#ifndef VPCNET_NETLINK_LINK_DEL_H
#define VPCNET_NETLINK_LINK_DEL_H

#include "rtnl.h"

/*
 * Sends `m`, an RTM_DELLINK of device `index`, in the calling thread's namespace, and returns once
 * the kernel has announced that device's deletion or acknowledged the request: 0, or -errno as the
 * kernel said it (its reason in r->why), exactly as rtnl_talk(r, m) would.
 */
int link_del_announced(struct rtnl *r, struct rtnl_msg *m, int index);

/* Waits until every deletion still finishing in the background has its ack (the helper's exit). */
void link_del_wait_finishers(void);

#endif
