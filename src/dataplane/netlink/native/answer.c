/* Answers to the agent: one JSON line each, written whole under a lock. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "helper.h"

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

_Noreturn void die(const char *what) {
  fprintf(stderr, "vpcnet-netlink: %s\n", what);
  _exit(70);
}

/* One answer, one write under the lock: answers of concurrent workers never interleave. */
void answer(struct jbuf *b) {
  if (b->oom) die("out of memory building an answer");
  jbuf_raw(b, "\n");
  pthread_mutex_lock(&out_lock);
  size_t off = 0;
  while (off < b->len) {
    ssize_t n = write(STDOUT_FILENO, b->data + off, b->len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) die("cannot write answers (the agent is gone)");
    off += (size_t)n;
  }
  pthread_mutex_unlock(&out_lock);
}

void answer_unentered(unsigned long long id, const char *reason) {
  struct jbuf b;
  jbuf_init(&b);
  jbuf_printf(&b, "{\"id\":%llu,\"entered\":false,\"reason\":", id);
  jbuf_str(&b, reason);
  jbuf_raw(&b, "}");
  answer(&b);
  jbuf_free(&b);
}

