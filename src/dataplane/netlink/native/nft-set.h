/* Elements of an nftables IPv4 address set, added or deleted over nfnetlink in one transaction:
   what `nft add element` / `nft delete element` do, without starting a process. */
#ifndef VPCNET_NFT_SET_H
#define VPCNET_NFT_SET_H

#include <netinet/in.h>
#include <stddef.h>

#include "rtnl.h"

/* Adds (add != 0) or deletes the addresses as elements of set `set` of table `ip <table>`, in the
   calling thread's network namespace, as one transaction (all or none). Adding an element that is
   present is not an error; deleting one that is absent fails with -ENOENT (the caller counts that as
   already gone). Returns 0 or a negative errno (the kernel's, or the socket's). */
int nft_set_elements(int add, const char *table, const char *set, const struct in_addr *ips, size_t n);

/* Removes the addresses from the set whether or not each is present, as one transaction (one
   message round, however many addresses). Returns 0 or a negative errno (-ENOENT: no such table or
   set). In the node's namespace the socket stays open (nfnl-socket.c): a deletion then costs
   ~0.1 ms; closing the socket after it cost ~12 ms and held up the namespace's link deletions. */
int nft_set_remove(const char *table, const char *set, const struct in_addr *ips, size_t n);

/* Lists the IPv4 elements of set `set` of table `ip <table>` into `out` (at most `cap`; `*n` is how
   many the set holds, which may be more). A dump the kernel marks interrupted is read again, up to
   NETLINK_DUMP_ATTEMPTS in all. Returns 0 or a negative errno (-ENOENT: no such table or set;
   -EINTR: the set kept changing during every attempt). */
int nft_set_list(const char *table, const char *set, struct in_addr *out, size_t cap, size_t *n);

#endif
