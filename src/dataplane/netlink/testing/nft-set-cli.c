/* Test driver for nft-set.c: `nft-set-cli add|del TABLE SET IP...` prints the errno it got (0 = ok);
   `nft-set-cli list TABLE SET` prints the elements, one per line. */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "../native/nft-set.h"

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: nft-set-cli add|del|list TABLE SET [IP...]\n");
    return 2;
  }
  if (strcmp(argv[1], "list") == 0) {
    struct in_addr got[256];
    size_t n = 0;
    int rc = nft_set_list(argv[2], argv[3], got, 256, &n);
    if (rc != 0) {
      printf("%d\n", -rc);
      return 1;
    }
    for (size_t i = 0; i < n && i < 256; i++) printf("%s\n", inet_ntoa(got[i]));
    fprintf(stderr, "%zu elements\n", n);
    return 0;
  }
  struct in_addr ips[64];
  int n = 0;
  for (int i = 4; i < argc && n < 64; i++, n++) {
    if (inet_pton(AF_INET, argv[i], &ips[n]) != 1) {
      fprintf(stderr, "not an IPv4 address: %s\n", argv[i]);
      return 2;
    }
  }
  int rc = nft_set_elements(strcmp(argv[1], "add") == 0, argv[2], argv[3], ips, (size_t)n);
  printf("%d\n", -rc);
  return rc == 0 ? 0 : 1;
}
