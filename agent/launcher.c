/*
 * drydock-launch: the witness between the agent and one task.
 *
 *   drydock-launch STATUS_FILE PROGRAM ARGV0 [ARG...]
 *
 * It forks PROGRAM (looked up in PATH) with argv ARGV0 ARG... into a process group of its own, reports the task's pid on fd 3 (a pipe
 * to the agent), waits for it, and writes how it ended to STATUS_FILE as one JSON object
 * ({"pid":N,"exit_code":C} or {"pid":N,"signal":S,"core_dumped":B}), atomically (tmp +
 * rename, fsync'd).
 *
 * Why it exists: the agent signals the task's group (SIGTERM, grace, SIGKILL) but the
 * launcher lives in a group of its own, so it survives the kill and records the true end of
 * the task. It also survives the agent: after `kill -9` of the agent, the task keeps running
 * under its launcher, and the restarted agent reads STATUS_FILE to learn the exit code of a
 * task that ended while it was away. A Node process per task would cost ~40 MB; this costs
 * a few hundred kB.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static void write_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    buf += n;
    len -= (size_t)n;
  }
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: drydock-launch STATUS_FILE PROGRAM ARGV0 [ARG...]\n");
    return 2;
  }
  const char *status_file = argv[1];

  pid_t child = fork();
  if (child < 0) {
    perror("drydock-launch: fork");
    return 1;
  }
  if (child == 0) {
    /* The task: a process group of its own, default signal dispositions, no pipe to the agent. */
    setpgid(0, 0);
    close(3);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    execvp(argv[2], &argv[3]);
    fprintf(stderr, "drydock-launch: cannot execute '%s': %s\n", argv[2], strerror(errno));
    _exit(127);
  }

  /* Both sides set the group, so the agent never signals a group that does not exist yet. */
  setpgid(child, child);
  signal(SIGTERM, SIG_IGN);
  signal(SIGINT, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);

  char line[64];
  int len = snprintf(line, sizeof line, "%d\n", (int)child);
  write_all(3, line, (size_t)len);
  close(3);

  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) {
      perror("drydock-launch: waitpid");
      return 1;
    }
  }

  struct timeval now;
  gettimeofday(&now, NULL);
  long long ended_ms = (long long)now.tv_sec * 1000 + now.tv_usec / 1000;
  char json[256];
  if (WIFSIGNALED(status)) {
    len = snprintf(json, sizeof json, "{\"pid\":%d,\"signal\":%d,\"core_dumped\":%s,\"ended_ms\":%lld}\n", (int)child,
                   WTERMSIG(status), WCOREDUMP(status) ? "true" : "false", ended_ms);
  } else {
    len = snprintf(json, sizeof json, "{\"pid\":%d,\"exit_code\":%d,\"ended_ms\":%lld}\n", (int)child,
                   WEXITSTATUS(status), ended_ms);
  }

  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", status_file);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    perror("drydock-launch: open status file");
    return 1;
  }
  write_all(fd, json, (size_t)len);
  fsync(fd);
  close(fd);
  if (rename(tmp, status_file) < 0) {
    perror("drydock-launch: rename status file");
    return 1;
  }
  return 0;
}
