/* The nfnetlink socket nft-set.c talks through: kept open in the node's namespace (nfnl-socket.c
   says why), one per thread; a socket of its own for each call anywhere else. */
#ifndef VPCNET_NFNL_SOCKET_H
#define VPCNET_NFNL_SOCKET_H

#include <stdbool.h>

struct nfnl_socket {
  int fd;
  bool kept;
};

/* Names the namespace whose sockets are kept: the node's (`ns_fd` refers to it). Without this
   call, none is kept. */
void nfnl_keep_in(int ns_fd);

/*
 * A NETLINK_NETFILTER socket in the calling thread's namespace, with `count` sequence numbers
 * reserved from `*seq` on (numbers never used before on that socket, so a late answer to an
 * earlier request cannot be taken for this one). 0 or -errno.
 */
int nfnl_open(struct nfnl_socket *s, unsigned count, unsigned *seq);

/* Done with the socket: one of its own is closed; a kept one stays open unless the exchange
   failed (`ok` false), which may have left it in a state nobody should inherit. */
void nfnl_release(struct nfnl_socket *s, bool ok);

#endif
