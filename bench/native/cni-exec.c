/*
 * The bench's runtime stand-in: execs a CNI plugin the way a container runtime does (a small
 * process that spawns the plugin with the CNI environment and its config on stdin) and times each
 * exec from spawn to exit. The bench itself is a large Node process whose every spawn forks it
 * (milliseconds, growing with its memory): that cost belonged to neither plugin, and it diluted
 * every ratio. Started once per batch inside the node's namespace; the jobs come on stdin.
 *
 *   cni-exec PLUGIN CNI_PATH CONF_FILE [--concurrent] < jobs
 *   job line:  ADD|DEL <containerId> <netnsPath>
 *   output:    one line per job in input order, "<ms> <exit code>", then for a failed job a line
 *              "output: <the plugin's stdout, first 400 bytes, newlines as spaces>"; with
 *              --concurrent (every job spawned at once) a last line "wall <ms>".
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_JOBS 4096

extern char **environ;

struct job {
  char command[8], id[128], netns[512];
  pid_t pid;
  int out;
  double start, end;
  int status;
};

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static const char *plugin, *cni_path, *conf_file;

static void spawn_job(struct job *j) {
  char env_cmd[32], env_id[160], env_ns[540], env_path[600], env_args[220], env_syspath[1024];
  snprintf(env_cmd, sizeof env_cmd, "CNI_COMMAND=%s", j->command);
  snprintf(env_id, sizeof env_id, "CNI_CONTAINERID=%s", j->id);
  snprintf(env_ns, sizeof env_ns, "CNI_NETNS=%s", j->netns);
  snprintf(env_path, sizeof env_path, "CNI_PATH=%s", cni_path);
  /* IgnoreUnknown, as containerd sends it: the reference plugins refuse unknown CNI_ARGS otherwise. */
  snprintf(env_args, sizeof env_args, "CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=bench;K8S_POD_NAME=%.100s", j->id);
  const char *path = getenv("PATH");
  snprintf(env_syspath, sizeof env_syspath, "PATH=%s", path ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
  char *envp[] = {env_cmd, env_id, env_ns, "CNI_IFNAME=eth0", env_path, env_args, env_syspath, NULL};
  j->out = memfd_create("cni-out", MFD_CLOEXEC);
  if (j->out < 0) {
    perror("memfd_create");
    exit(2);
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, conf_file, O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, j->out, 1);
  char *argv[] = {(char *)plugin, NULL};
  j->start = now_ms();
  if (posix_spawn(&j->pid, plugin, &fa, NULL, argv, envp) != 0) {
    perror("posix_spawn");
    exit(2);
  }
  posix_spawn_file_actions_destroy(&fa);
}

static void report(const struct job *j) {
  int code = WIFEXITED(j->status) ? WEXITSTATUS(j->status) : 128 + WTERMSIG(j->status);
  printf("%.3f %d\n", j->end - j->start, code);
  if (code == 0) return;
  char buf[401];
  ssize_t n = pread(j->out, buf, sizeof buf - 1, 0);
  if (n < 0) n = 0;
  buf[n] = '\0';
  for (ssize_t i = 0; i < n; i++)
    if (buf[i] == '\n' || buf[i] == '\r') buf[i] = ' ';
  printf("output: %s\n", buf);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: cni-exec PLUGIN CNI_PATH CONF_FILE [--concurrent] < jobs\n");
    return 2;
  }
  plugin = argv[1];
  cni_path = argv[2];
  conf_file = argv[3];
  int concurrent = argc > 4 && strcmp(argv[4], "--concurrent") == 0;
  static struct job jobs[MAX_JOBS];
  int n = 0;
  char line[1024];
  while (n < MAX_JOBS && fgets(line, sizeof line, stdin) != NULL) {
    struct job *j = &jobs[n];
    if (sscanf(line, "%7s %127s %511s", j->command, j->id, j->netns) == 3) n++;
  }
  if (!concurrent) {
    for (int i = 0; i < n; i++) {
      spawn_job(&jobs[i]);
      waitpid(jobs[i].pid, &jobs[i].status, 0);
      jobs[i].end = now_ms();
      report(&jobs[i]);
    }
    return 0;
  }
  double wall = now_ms();
  for (int i = 0; i < n; i++) spawn_job(&jobs[i]);
  for (int left = n; left > 0; left--) {
    int status;
    pid_t pid = waitpid(-1, &status, 0);
    double end = now_ms();
    for (int i = 0; i < n; i++) {
      if (jobs[i].pid != pid) continue;
      jobs[i].status = status;
      jobs[i].end = end;
    }
  }
  wall = now_ms() - wall;
  for (int i = 0; i < n; i++) report(&jobs[i]);
  printf("wall %.3f\n", wall);
  return 0;
}
