/* Size bounds of the forwarder's static buffers. A CNI config or result is a few KiB; these leave
 * ample room, and an input over a bound is reported as an error naming it. */
#ifndef VPCNET_BOUNDS_H
#define VPCNET_BOUNDS_H

#define STDIN_MAX (1u << 20)
#define RESPONSE_MAX (1u << 20)
#define TEXT_MAX (3u * STDIN_MAX) /* UTF-8 decoding turns one invalid byte into 3 (U+FFFD) */
#define BODY_MAX (8u << 20)       /* escaping turns one byte into at most 6 (\u00XX) */
#define MSG_MAX (TEXT_MAX + 4096) /* messages may quote a socket path or dir from the config */

#endif
