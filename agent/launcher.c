/*
 * drydock-launch: the witness between the agent and one task.
 *
 *   drydock-launch STATUS_FILE PROGRAM ARGV0 [ARG...]
 *   drydock-launch --serve
 *
 * It forks PROGRAM (looked up in PATH) with argv ARGV0 ARG... into a process group of its own,
 * reports the task's pid to the agent, waits for it, and writes how it ended to STATUS_FILE as
 * one JSON object ({"pid":N,"exit_code":C} or {"pid":N,"signal":S,"core_dumped":B}),
 * durably: over the blank file it made once the task was forked, in place, fdatasync'd (or,
 * without that file, tmp + rename, fsync'd). When that cannot be done (a full disk), it tells
 * the agent the end instead, on the channel it reported the pid on, which it keeps open until
 * then: "T LAUNCHER_PID JSON", the JSON with "errno" and "error" (strerror) of the write that
 * failed. The agent, if it is still there, learns the true end all the same. In the server's form the task opens its sandbox's
 * stdout and stderr itself, after its pid was reported. With DRYDOCK_TASK_NICE in its environment (which the task does
 * not inherit), the task runs at that nice value.
 *
 * Why it exists: the agent signals the task's group (SIGTERM, grace, SIGKILL) but the
 * launcher lives in a group of its own, so it survives the kill and records the true end of
 * the task. It also survives the agent: after `kill -9` of the agent, the task keeps running
 * under its launcher, and the restarted agent reads STATUS_FILE to learn the exit code of a
 * task that ended while it was away. A Node process per task would cost ~40 MB; this costs
 * a few hundred kB.
 *
 * Started by the agent with the first form, the launcher reports the pid on fd 3. The second
 * form is the agent's launch server: a small process the agent starts once, which forks a
 * launcher per request. Forking the agent itself copies its page tables, about 30 us per MB of
 * its resident memory (some 2 ms for an agent of 60 MB, the bulk of a launch); forking this
 * server costs a small fraction of that. Protocol, on the server's stdin and stdout:
 *
 *   request  (stdin):  u32 little-endian length, then NUL-terminated strings:
 *                      ID STATUS_FILE CWD STDOUT_PATH STDERR_PATH PROGRAM ARGC ARGV... ENVC ENV...
 *   replies (stdout):  "S ID LAUNCHER_PID"          the launcher has the request (the server's)
 *                      "P ID LAUNCHER_PID TASK_PID [START_TIME]"
 *                                                   the task was forked (by the launcher, which
 *                                                   adds its own start time when it can read it)
 *                      "F ID MESSAGE"               the launcher could not start the task
 *                      "T LAUNCHER_PID JSON"        the task's end, which the launcher could not
 *                                                   record in its status file (before its E)
 *                      "E LAUNCHER_PID STATUS"      a launcher ended (reaped by the server)
 *
 * The server keeps one launcher forked ahead (the spare, below): a request is handed to it, and
 * the next spare is forked once the requests at hand are served, so a launch waits for one fork
 * (the task's), not two.
 *
 * Each reply is one line shorter than PIPE_BUF, written with one write(2), so the lines of the
 * server and of its launchers never interleave. The server exits when its stdin closes (the
 * agent is gone); its launchers and their tasks live on, as they do when the agent started them.
 *
 *   drydock-launch --signal
 *
 * The agent's signaller: sends the signals of the agent's kills, a batch per line of its stdin,
 * from a process that runs SCHED_FIFO when it may. A signal wakes its task; at the agent's own
 * (normal) scheduling class the woken tasks take the CPU from the agent between its kill(2)s,
 * and on a busy machine a drain's 100 SIGTERMs went out over 20 to 90 ms instead of about 1
 * (measured with the kernel's signal_generate tracepoint, 2 cores). A real-time process is not
 * preempted by them. It does nothing else, so it cannot hold a CPU for long. Protocol:
 *
 *   first line (stdout): "R fifo"                  it runs SCHED_FIFO
 *                        "R other REASON"          it may not (the agent then signals itself)
 *   request (stdin):     "SIG PGID SIG PGID ...\n" kill(-PGID, SIG) for each pair, in order
 *   reply (stdout):      "D\n"                     per request line, once it was carried out
 *                        "X MESSAGE\n"             a malformed line (nothing of it was sent)
 *
 * A group of 1 or less, the signaller's own group, or a signal outside 1..64 makes the line
 * malformed. It exits when its stdin closes.
 *
 *   drydock-launch --pdeathsig SIGNAL PARENT_PID PROGRAM [ARG...]
 *
 * Not the agent's: the local cluster's (scripts/cluster.ts), so that its daemons stop when the
 * cluster process dies, even of SIGKILL, which it cannot catch. It asks the kernel for SIGNAL
 * (a number) at the death of its parent (prctl PR_SET_PDEATHSIG, kept across execve) and then
 * becomes PROGRAM (looked up in PATH) with argv PROGRAM ARG..., under the same pid. Node has no
 * way to make that call itself, and a binary already built for every agent makes it without a
 * process or a pipe per daemon. A parent already gone (its pid is no longer PARENT_PID) starts
 * nothing: exit 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

/* The nice value of tasks (DRYDOCK_TASK_NICE), when the agent gave one. */
static int task_nice_given = 0;
static int task_nice = 0;

/* The size of the blank exit file the agent makes for a launcher (agent/launcher.ts: EXIT_FILE_SIZE). */
#define EXIT_FILE_SIZE 256

/* Writes all of buf; 0, or -1 with errno set (a write cut short by a full disk says why on the next). */
static int write_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) {
      errno = EIO;
      return -1;
    }
    buf += n;
    len -= (size_t)n;
  }
  return 0;
}

/*
 * Writes the end (`json`, `len` bytes with its newline) to the status file durably: over the
 * blank file in place, else aside and renamed into place. 0, or the errno of what failed (the
 * file then holds no end: a blank, a torn or an empty one reads as none).
 */
static int record_end(const char *status_file, const char *json, int len) {
  int fd = len < EXIT_FILE_SIZE ? open(status_file, O_WRONLY | O_CLOEXEC) : -1;
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size == EXIT_FILE_SIZE) {
    /* Written over blocks the blank already holds: this needs no new space. */
    int err = 0;
    errno = 0;
    if (pwrite(fd, json, (size_t)len, 0) != len) err = errno != 0 ? errno : ENOSPC;
    else if (fdatasync(fd) < 0) err = errno;
    close(fd);
    return err;
  }
  if (fd >= 0) close(fd);
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", status_file);
  fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  int err = 0;
  if (write_all(fd, json, (size_t)len) < 0 || fsync(fd) < 0) err = errno;
  close(fd);
  if (err == 0 && rename(tmp, status_file) < 0) err = errno;
  if (err != 0) unlink(tmp);
  return err;
}

/*
 * The launcher's life once it is the process that will own the task: fork the task, report its
 * pid on `report_fd` (a line of `report_prefix`, the pid and `report_suffix`), wait, record the
 * end. Returns the launcher's exit code.
 */
static int run_launcher(const char *status_file, const char *program, char **task_argv, int report_fd, const char *report_prefix, const char *report_suffix,
                        const char *stdout_path, const char *stderr_path) {
  /*
   * Every signal is blocked across the fork. The task starts with the launcher's dispositions
   * (SIGTERM ignored, in the server's form) and sets its own a moment later; a SIGTERM that the
   * agent sends in between, as soon as it knows the pid, would be discarded if it were merely
   * ignored, but a blocked signal waits. The task unblocks once its dispositions are the default.
   */
  sigset_t all, saved;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &saved);
  pid_t child = fork();
  if (child < 0) {
    perror("drydock-launch: fork");
    sigprocmask(SIG_SETMASK, &saved, NULL);
    return 1;
  }
  if (child == 0) {
    /* The task: default signal dispositions first, a process group of its own, no pipe to the agent. */
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    setpgid(0, 0);
    close(report_fd);
    /*
     * Its output files are opened here, after the launcher reported its pid: making two files
     * costs the filesystem more than the fork, and nothing waits for it. The agent made the
     * sandbox, so this fails only if the sandbox went away meanwhile: said on the launcher's
     * stderr, and the task ends with 127.
     */
    if (stdout_path != NULL) {
      int out = open(stdout_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      int err = open(stderr_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (out < 0 || err < 0) {
        fprintf(stderr, "drydock-launch: cannot open the sandbox's stdout or stderr: %s\n", strerror(errno));
        _exit(127);
      }
      dup2(out, 1);
      dup2(err, 2);
      close(out);
      close(err);
    }
    /* The agent may run above its tasks' priority; the task gets the one the agent was started with. */
    if (task_nice_given) setpriority(PRIO_PROCESS, 0, task_nice);
    /* Nothing blocked: a signal that came meanwhile is delivered now, with the default action. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execvp(program, task_argv);
    fprintf(stderr, "drydock-launch: cannot execute '%s': %s\n", program, strerror(errno));
    _exit(127);
  }

  /* Both sides set the group, so the agent never signals a group that does not exist yet. */
  setpgid(child, child);
  signal(SIGTERM, SIG_IGN);
  signal(SIGINT, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  sigprocmask(SIG_SETMASK, &saved, NULL);

  char line[256];
  int len = snprintf(line, sizeof line, "%s%d%s\n", report_prefix, (int)child, report_suffix);
  (void)write_all(report_fd, line, (size_t)len);
  /* report_fd stays open: should the end not reach the status file, the agent hears it here. */

  /* The blank exit file the end is later written over (see below), made now that nothing waits. */
  int blank = open(status_file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (blank >= 0) {
    char spaces[EXIT_FILE_SIZE];
    memset(spaces, ' ', sizeof spaces);
    /* Cut short by a full disk, the file is no blank: the end then goes aside and is renamed. */
    (void)write_all(blank, spaces, sizeof spaces);
    close(blank);
  }

  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) {
      perror("drydock-launch: waitpid");
      close(report_fd);
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

  /*
   * The exit file made above, EXIT_FILE_SIZE blank bytes: the end is written over them in place
   * and fdatasync'd, a data write only (no file to create, no name to change). Otherwise (it
   * could not be made, or was there before) the end is written aside and renamed into place.
   */
  int err = record_end(status_file, json, len);
  if (err == 0) {
    close(report_fd);
    return 0;
  }
  /*
   * Not recorded: the agent is told the end on the report channel instead (one write, the JSON
   * with why), so that it still reports how the task ended. An agent gone meanwhile (EPIPE, the
   * signal is ignored) finds no end at all, and says so.
   */
  fprintf(stderr, "drydock-launch: cannot record how task %d ended in %s: %s\n", (int)child, status_file, strerror(err));
  char report[512];
  int rlen = snprintf(report, sizeof report, "T %d %.*s,\"errno\":%d,\"error\":\"%s\"}\n", (int)getpid(), len - 2, json, err, strerror(err));
  if (rlen > 0 && (size_t)rlen < sizeof report) (void)write_all(report_fd, report, (size_t)rlen);
  close(report_fd);
  return 3;
}

/* A reply line of the server or of one of its launchers: one write, so lines never interleave. */
static void reply(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reply(int fd, const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int len = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (len < 0) return;
  if ((size_t)len > sizeof line - 2) len = (int)sizeof line - 2;
  /* A message may not break the line protocol. */
  for (int i = 0; i < len; i++) if (line[i] == '\n') line[i] = ' ';
  line[len++] = '\n';
  (void)write_all(fd, line, (size_t)len);
}

/* The next NUL-terminated field of a request, or NULL when the request has no more. */
static char *field(char **pos, char *end) {
  if (*pos >= end) return NULL;
  char *f = *pos;
  char *nul = memchr(f, '\0', (size_t)(end - f));
  if (nul == NULL) return NULL;
  *pos = nul + 1;
  return f;
}

/* A count field: a decimal number small enough to be sane. */
static int count_field(char **pos, char *end, int max) {
  char *f = field(pos, end);
  if (f == NULL || *f == '\0') return -1;
  char *stop;
  long n = strtol(f, &stop, 10);
  if (*stop != '\0' || n < 0 || n > max) return -1;
  return (int)n;
}

/* A request's fields, pointing into its bytes. */
struct request {
  char *id, *status_file, *cwd, *stdout_path, *stderr_path, *program;
  char **argv, **envp;
};

/* Parses a request; NULL when it is well formed, else what is wrong (argv and envp are then freed). */
static const char *parse_request(char *req, size_t size, struct request *r) {
  char *pos = req, *end = req + size;
  memset(r, 0, sizeof *r);
  r->id = field(&pos, end);
  r->status_file = field(&pos, end);
  r->cwd = field(&pos, end);
  r->stdout_path = field(&pos, end);
  r->stderr_path = field(&pos, end);
  r->program = field(&pos, end);
  int argc = count_field(&pos, end, 65536);
  if (r->id == NULL || r->status_file == NULL || r->cwd == NULL || r->stdout_path == NULL || r->stderr_path == NULL || r->program == NULL || argc < 1)
    return "malformed request";
  r->argv = calloc((size_t)argc + 1, sizeof(char *));
  if (r->argv == NULL) return "out of memory";
  for (int i = 0; i < argc; i++) {
    if ((r->argv[i] = field(&pos, end)) == NULL) goto malformed;
  }
  int envc = count_field(&pos, end, 65536);
  if (envc < 0 || (r->envp = calloc((size_t)envc + 1, sizeof(char *))) == NULL) goto malformed;
  for (int i = 0; i < envc; i++) {
    if ((r->envp[i] = field(&pos, end)) == NULL) goto malformed;
  }
  return NULL;
malformed:
  free(r->argv);
  free(r->envp);
  r->argv = r->envp = NULL;
  return "malformed request";
}

/*
 * The start time of this process (field 22 of /proc/self/stat, clock ticks since boot), which
 * tells a reused pid apart: reported with the task's pid, so the agent need not read it. Empty if
 * it cannot be read (the agent then reads it itself).
 */
static void own_start_time(char *out, size_t cap) {
  out[0] = '\0';
  char buf[1024];
  int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return;
  buf[n] = '\0';
  /* The command name is in parentheses and may hold spaces: the fields start after the last ')'. */
  char *p = strrchr(buf, ')');
  if (p == NULL || p[1] != ' ') return;
  p += 2;
  for (int i = 0; i < 19 && p != NULL; i++) {
    p = strchr(p, ' ');
    if (p != NULL) p++;
  }
  if (p == NULL) return;
  size_t len = strcspn(p, " \n");
  if (len == 0 || len >= cap) return;
  memcpy(out, p, len);
  out[len] = '\0';
}

/*
 * A launcher's first steps, before it has a request or just after it was forked for one: a
 * session of its own (a terminal's or the agent's signals do not reach it), /dev/null as stdin
 * and stdout. The reply pipe moves off fd 1: the server's stdout must end when the server does,
 * and the task opens its own stdout and stderr. fd 2 stays the server's (the agent's) for what
 * the launcher has to say. Returns the reply fd, or -1 (said as F when the request's `id` is known).
 */
static int become_launcher(int out_fd, int sig_fd, const sigset_t *blocked, const char *id) {
  close(sig_fd);
  sigprocmask(SIG_UNBLOCK, blocked, NULL);
  setsid();
  int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd >= 0) {
    dup2(null_fd, 0);
    if (null_fd != 0) close(null_fd);
  }
  int report_fd = fcntl(out_fd, F_DUPFD_CLOEXEC, 3);
  if (report_fd < 0) return -1;
  int null_out = open("/dev/null", O_WRONLY);
  if (null_out < 0 || dup2(null_out, 1) < 0) {
    if (id != NULL) reply(report_fd, "F %s cannot open /dev/null: %s", id, strerror(errno));
    return -1;
  }
  if (null_out != 1) close(null_out);
  return report_fd;
}

/* The launcher with its request: into the sandbox, then fork the task and see it through. Never returns. */
static void launch(const struct request *r, int report_fd, const char *start_time) {
  if (chdir(r->cwd) < 0) {
    reply(report_fd, "F %s cannot enter the sandbox '%s': %s", r->id, r->cwd, strerror(errno));
    _exit(1);
  }
  extern char **environ;
  environ = r->envp;
  /* "P ID LAUNCHER_PID " then the task's pid, then this launcher's start time (when known). */
  char prefix[128], suffix[40];
  snprintf(prefix, sizeof prefix, "P %s %d ", r->id, (int)getpid());
  snprintf(suffix, sizeof suffix, start_time[0] == '\0' ? "" : " %s", start_time);
  _exit(run_launcher(r->status_file, r->program, r->argv, report_fd, prefix, suffix, r->stdout_path, r->stderr_path));
}

/*
 * The spare launcher: forked ahead of time, set up as a launcher, it waits on a pipe of its own
 * for the next request. A launch then costs the server a write instead of a fork, and the fork
 * it would have cost is made while the agent is not waiting. Its pipe's write end is held by the
 * server alone (every other child closes it): when the server goes, the spare reads an end and
 * exits, having started nothing.
 */
static pid_t spare_pid = -1;
static int spare_fd = -1;
/* Spares are made while this is set: until one ends without having had a request. */
static int spares = 1;

static void spare_wait(int req_fd, int out_fd, int sig_fd, const sigset_t *blocked) {
  int report_fd = become_launcher(out_fd, sig_fd, blocked, NULL);
  if (report_fd < 0) _exit(1);
  char start_time[32];
  own_start_time(start_time, sizeof start_time);
  unsigned char head[4];
  size_t got = 0;
  while (got < sizeof head) {
    ssize_t n = read(req_fd, head + got, sizeof head - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(0); /* the server is gone, or let this spare go */
    got += (size_t)n;
  }
  uint32_t size = (uint32_t)head[0] | (uint32_t)head[1] << 8 | (uint32_t)head[2] << 16 | (uint32_t)head[3] << 24;
  char *req = malloc(size > 0 ? size : 1);
  if (req == NULL) _exit(1);
  for (got = 0; got < size;) {
    ssize_t n = read(req_fd, req + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(0); /* cut short: the server never sent the S line for it */
    got += (size_t)n;
  }
  close(req_fd);
  struct request r;
  const char *bad = parse_request(req, size, &r);
  if (bad != NULL) {
    /* The server parsed these very bytes before handing them over: not expected. */
    reply(report_fd, "F %s %s", r.id != NULL && strchr(r.id, ' ') == NULL ? r.id : "?", bad);
    _exit(1);
  }
  launch(&r, report_fd, start_time);
}

/* Forks the spare launcher, if there is none. Without one, launches fork as before. */
static void make_spare(int out_fd, int sig_fd, const sigset_t *blocked) {
  if (spare_pid > 0 || !spares) return;
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) return;
  pid_t pid = fork();
  if (pid < 0) {
    close(p[0]);
    close(p[1]);
    return;
  }
  if (pid == 0) {
    close(p[1]);
    spare_wait(p[0], out_fd, sig_fd, blocked);
  }
  close(p[0]);
  spare_pid = pid;
  spare_fd = p[1];
}

/* Writes the whole request to the spare; false (and the spare is let go) if it cannot take it. */
static int hand_to_spare(const char *req, size_t size) {
  if (spare_fd < 0) return 0;
  unsigned char head[4] = {(unsigned char)size, (unsigned char)(size >> 8), (unsigned char)(size >> 16), (unsigned char)(size >> 24)};
  struct iovec v[2] = {{.iov_base = head, .iov_len = sizeof head}, {.iov_base = (void *)req, .iov_len = size}};
  size_t left = sizeof head + size;
  while (left > 0) {
    ssize_t n = writev(spare_fd, v, 2);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    left -= (size_t)n;
    for (int i = 0; i < 2; i++) {
      size_t used = (size_t)n < v[i].iov_len ? (size_t)n : v[i].iov_len;
      v[i].iov_base = (char *)v[i].iov_base + used;
      v[i].iov_len -= used;
      n -= (ssize_t)used;
    }
  }
  close(spare_fd);
  spare_fd = -1;
  /* Not taken whole (the spare died): it is reaped without a word, as a spare it still is. */
  if (left > 0) return 0;
  spare_pid = -1;
  return 1;
}

/* One request: handed to the spare launcher, or a launcher forked for it. A malformed request is answered F and changes nothing. */
static void serve_one(char *req, size_t size, int out_fd, int sig_fd, const sigset_t *blocked) {
  struct request r;
  const char *bad = parse_request(req, size, &r);
  if (bad != NULL) {
    reply(out_fd, "F %s %s", r.id != NULL && strchr(r.id, ' ') == NULL ? r.id : "?", bad);
    return;
  }
  pid_t spare = spare_pid;
  if (hand_to_spare(req, size)) {
    reply(out_fd, "S %s %d", r.id, (int)spare);
  } else {
    pid_t launcher = fork();
    if (launcher < 0) {
      reply(out_fd, "F %s cannot fork a launcher: %s", r.id, strerror(errno));
    } else if (launcher == 0) {
      int report_fd = become_launcher(out_fd, sig_fd, blocked, r.id);
      if (report_fd < 0) _exit(1);
      char start_time[32];
      own_start_time(start_time, sizeof start_time);
      launch(&r, report_fd, start_time);
    } else {
      reply(out_fd, "S %s %d", r.id, (int)launcher);
    }
  }
  free(r.argv);
  free(r.envp);
}

/* Reaps every launcher that ended and tells the agent. */
static void reap(int out_fd) {
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    if (pid == spare_pid) {
      /* A spare that ended before it had a request (killed, or it could not set itself up): the
       * agent never heard of it. No other is made, so a spare that cannot live is not forked again
       * and again: launches fork their launchers, as without spares. */
      spare_pid = -1;
      spares = 0;
      if (spare_fd >= 0) close(spare_fd);
      spare_fd = -1;
      continue;
    }
    reply(out_fd, "E %d %d", (int)pid, status);
  }
}

static int serve(void) {
  signal(SIGTERM, SIG_IGN);
  signal(SIGINT, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  sigset_t blocked;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGCHLD);
  sigprocmask(SIG_BLOCK, &blocked, NULL);
  int sig_fd = signalfd(-1, &blocked, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sig_fd < 0) {
    perror("drydock-launch: signalfd");
    return 1;
  }
  size_t cap = 1 << 16, have = 0;
  char *buf = malloc(cap);
  if (buf == NULL) return 1;
  for (;;) {
    /* Every request read so far is served: the spare they used is replaced before waiting again. */
    make_spare(1, sig_fd, &blocked);
    struct pollfd fds[2] = {{.fd = 0, .events = POLLIN}, {.fd = sig_fd, .events = POLLIN}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      perror("drydock-launch: poll");
      return 1;
    }
    if (fds[1].revents & POLLIN) {
      struct signalfd_siginfo info;
      while (read(sig_fd, &info, sizeof info) == (ssize_t)sizeof info) {}
      reap(1);
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      if (have == cap) {
        char *bigger = realloc(buf, cap * 2);
        if (bigger == NULL) return 1;
        buf = bigger;
        cap *= 2;
      }
      ssize_t n = read(0, buf + have, cap - have);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return 0; /* the agent is gone */
      have += (size_t)n;
      size_t used = 0;
      while (have - used >= 4) {
        uint32_t size = (uint32_t)(unsigned char)buf[used] | (uint32_t)(unsigned char)buf[used + 1] << 8 |
                        (uint32_t)(unsigned char)buf[used + 2] << 16 | (uint32_t)(unsigned char)buf[used + 3] << 24;
        if (size > (64u << 20)) {
          fprintf(stderr, "drydock-launch: request of %u bytes refused\n", size);
          return 1;
        }
        if (have - used - 4 < size) break;
        serve_one(buf + used + 4, size, 1, sig_fd, &blocked);
        used += 4 + size;
      }
      memmove(buf, buf + used, have - used);
      have -= used;
    }
  }
}

/*
 * One request line of the signaller: pairs of decimal numbers. Every pair is checked before any
 * signal goes out. Returns NULL when the line was carried out, else what is wrong with it.
 */
#define MAX_PAIRS 4096
static const char *signal_line(char *line) {
  static int sigs[MAX_PAIRS];
  static pid_t groups[MAX_PAIRS];
  int n = 0;
  pid_t own = getpgrp();
  char *pos = line;
  for (;;) {
    while (*pos == ' ') pos++;
    if (*pos == '\0') break;
    if (n == MAX_PAIRS) return "too many signals in one line";
    char *end;
    errno = 0;
    long sig = strtol(pos, &end, 10);
    if (end != pos && *end == '\0' && errno == 0) return "a signal without a process group";
    if (end == pos || *end != ' ' || errno != 0 || sig < 1 || sig > 64) return "bad signal number";
    pos = end;
    while (*pos == ' ') pos++;
    long pgid = strtol(pos, &end, 10);
    if (end == pos || (*end != ' ' && *end != '\0') || errno != 0 || pgid <= 1 || pgid > 0x3fffffff) return "bad process group";
    if ((pid_t)pgid == own) return "refusing to signal the signaller's own group";
    pos = end;
    sigs[n] = (int)sig;
    groups[n] = (pid_t)pgid;
    n++;
  }
  if (n == 0) return "empty line";
  /* A group already gone (ESRCH) is not an error: the task ended before its signal. */
  for (int i = 0; i < n; i++) kill(-groups[i], sigs[i]);
  return NULL;
}

static int signaller(void) {
  signal(SIGTERM, SIG_IGN);
  signal(SIGINT, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  struct sched_param param = {.sched_priority = 1};
  if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &param) == 0) reply(1, "R fifo");
  else reply(1, "R other %s", strerror(errno));
  size_t cap = 1 << 16, have = 0;
  char *buf = malloc(cap);
  if (buf == NULL) return 1;
  int skipping = 0; /* inside a line longer than the buffer: dropped up to its end */
  for (;;) {
    ssize_t n = read(0, buf + have, cap - have);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 0; /* the agent is gone */
    have += (size_t)n;
    size_t used = 0;
    char *nl;
    while ((nl = memchr(buf + used, '\n', have - used)) != NULL) {
      *nl = '\0';
      if (skipping) {
        skipping = 0;
        reply(1, "X line longer than %zu bytes", cap);
      } else {
        const char *bad = signal_line(buf + used);
        if (bad == NULL) reply(1, "D");
        else reply(1, "X %s", bad);
      }
      used = (size_t)(nl - buf) + 1;
    }
    memmove(buf, buf + used, have - used);
    have -= used;
    if (have == cap) {
      skipping = 1;
      have = 0;
    }
  }
}

/* drydock-launch --pdeathsig: see the header. Returns only when it could not become PROGRAM. */
static int pdeathsig_exec(const char *sig_text, const char *parent_text, char **program_argv) {
  char *end = NULL;
  errno = 0;
  long sig = strtol(sig_text, &end, 10);
  if (end == sig_text || *end != '\0' || errno != 0 || sig < 1 || sig > 64) {
    fprintf(stderr, "drydock-launch: --pdeathsig: bad signal number '%s'\n", sig_text);
    return 2;
  }
  errno = 0;
  long parent = strtol(parent_text, &end, 10);
  if (end == parent_text || *end != '\0' || errno != 0 || parent <= 1 || parent > 0x3fffffff) {
    fprintf(stderr, "drydock-launch: --pdeathsig: bad parent pid '%s'\n", parent_text);
    return 2;
  }
  if (prctl(PR_SET_PDEATHSIG, sig) != 0) {
    perror("drydock-launch: prctl(PR_SET_PDEATHSIG)");
    return 1;
  }
  /* Asked after the prctl: a parent that died before it would send nothing, and is seen here. */
  if (getppid() != (pid_t)parent) {
    fprintf(stderr, "drydock-launch: --pdeathsig: the parent %ld is gone; not starting %s\n", parent, program_argv[0]);
    return 1;
  }
  execvp(program_argv[0], program_argv);
  fprintf(stderr, "drydock-launch: cannot execute '%s': %s\n", program_argv[0], strerror(errno));
  return 127;
}

int main(int argc, char **argv) {
  /* Read, then kept out of every task's environment. */
  const char *nice_text = getenv("DRYDOCK_TASK_NICE");
  if (nice_text != NULL) {
    char *end = NULL;
    long v = strtol(nice_text, &end, 10);
    if (*nice_text != '\0' && end != NULL && *end == '\0' && v >= -20 && v <= 19) {
      task_nice_given = 1;
      task_nice = (int)v;
    }
    unsetenv("DRYDOCK_TASK_NICE");
  }
  if (argc == 2 && strcmp(argv[1], "--serve") == 0) return serve();
  if (argc == 2 && strcmp(argv[1], "--signal") == 0) return signaller();
  int pdeathsig = argc >= 2 && strcmp(argv[1], "--pdeathsig") == 0;
  if (pdeathsig && argc >= 5) return pdeathsig_exec(argv[2], argv[3], &argv[4]);
  if (argc < 4 || pdeathsig) {
    fprintf(stderr, "usage: drydock-launch STATUS_FILE PROGRAM ARGV0 [ARG...]\n       drydock-launch --serve\n       drydock-launch --signal\n       drydock-launch --pdeathsig SIGNAL PARENT_PID PROGRAM [ARG...]\n");
    return 2;
  }
  return run_launcher(argv[1], argv[2], &argv[3], 3, "", "", NULL, NULL);
}
