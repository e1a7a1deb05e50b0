/* Size bounds of the forwarder's static buffers. A CNI config or result is a few KiB; these leave
 * ample room, and an input over a bound is reported as an error naming it. */
#ifndef VPCNET_BOUNDS_H
#define VPCNET_BOUNDS_H

#include "wire.h"

/* A request holds stdin whole, so a larger stdin is refused before it is all read. */
#define STDIN_MAX ((unsigned)MAX_REQUEST_BYTES)
#define RESPONSE_MAX (1u << 20)   /* an answer's body (MAX_RESPONSE_BYTES in forward.ts) */
#define RESPONSE_RAW_MAX (RESPONSE_MAX + (64u << 10)) /* the body with its head and chunk framing */
#define SOCKET_PATH_MAX 107u      /* sun_path less its NUL (SOCKET_PATH_MAX in forward.ts) */
#define TEXT_MAX (3u * STDIN_MAX) /* UTF-8 decoding turns one invalid byte into 3 (U+FFFD) */
#define BODY_MAX ((unsigned)MAX_REQUEST_BYTES) /* the agent reads no more: larger is refused here */
#define MSG_MAX (TEXT_MAX + 4096) /* messages may quote a socket path or dir from the config */

#endif
