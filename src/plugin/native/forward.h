/* forward.c: the request to the agent and its answer (src/plugin/forward.ts). */
#ifndef VPCNET_FORWARD_H
#define VPCNET_FORWARD_H

#include <stddef.h>

#include "buf.h"

/* AGENT_REFUSED_TOO_LARGE: HTTP 413, the request is over the agent's limit (a permanent error). */
enum outcome { AGENT_ANSWERED, AGENT_UNREACHABLE, AGENT_ANSWERED_BADLY, AGENT_REFUSED_TOO_LARGE };

struct agent_answer {
  int exit_code;
  struct buf *stdout_text; /* UTF-8 */
};

/* The request body: the CNI_* environment and stdin, as JSON.stringify({env, stdin}) writes it. */
void put_request(struct buf *b, const char *stdin_text, size_t stdin_len);
enum outcome forward_to_agent(const char *path, const char *body, size_t body_len, struct agent_answer *a,
                              struct buf *reason);

#endif
