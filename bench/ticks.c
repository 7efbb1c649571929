/* The cost floor of a sampler on this machine: a process that wakes at every tick of the
 * rate given (absolute ticks on the monotonic clock, as rprofile's sampler sleeps, with a 1 ns
 * timer slack) and does nothing else, until SIGINT. Built by bench/top_bench.py.
 *
 *   ticks RATE
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

static volatile sig_atomic_t stop;

static void on_sigint(int sig)
{
    (void)sig;
    stop = 1;
}

int main(int argc, char **argv)
{
    double rate = argc > 1 ? atof(argv[1]) : 0;
    if (rate <= 0)
        return 2;
    long interval = (long)(1e9 / rate);
    signal(SIGINT, on_sigint);
    prctl(PR_SET_TIMERSLACK, 1UL);
    struct timespec due;
    clock_gettime(CLOCK_MONOTONIC, &due);
    while (!stop) {
        due.tv_nsec += interval;
        while (due.tv_nsec >= 1000000000L) {
            due.tv_nsec -= 1000000000L;
            due.tv_sec++;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, NULL);
    }
    return 0;
}
