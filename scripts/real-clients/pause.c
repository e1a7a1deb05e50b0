/*
 * The process a pod sandbox runs: it keeps the pod's namespaces alive and does nothing else.
 * Termination requests end it with status 0; exited children are reaped so that, as PID 1 of
 * the pod, it never collects zombies.
 *
 * The signals it cares about are blocked and taken synchronously with sigwaitinfo() rather than
 * through handlers: a blocked signal is queued even for a namespace's PID 1 (which drops signals
 * it has no handler for), and there is no async-signal-safety to think about.
 */
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>

int main(void) {
  sigset_t watched;
  sigemptyset(&watched);
  sigaddset(&watched, SIGTERM);
  sigaddset(&watched, SIGINT);
  sigaddset(&watched, SIGCHLD);
  if (sigprocmask(SIG_BLOCK, &watched, NULL) != 0) return 1;

  for (;;) {
    int sig = sigwaitinfo(&watched, NULL);
    if (sig == SIGTERM || sig == SIGINT) return 0;
    if (sig == SIGCHLD)
      while (waitpid(-1, NULL, WNOHANG) > 0) {
      }
  }
}
