/*
 * Loaded into docbench under valgrind (LD_PRELOAD) by count-local-write.py; not part of any
 * build of the project.
 *
 * Valgrind rewrites the signal mask a program passes to sigsuspend in place, to keep its own
 * signals out of it. libdispatch's main thread (a Swift program with an async main waits in
 * dispatchMain) passes a mask that lives in read-only memory, so valgrind faults on its own
 * write and stops ("the 'impossible' happened", SIGSEGV at the address of
 * _dispatch_sigsuspend.mask). This wrapper hands sigsuspend a writable copy instead.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>

int sigsuspend(const sigset_t *mask) {
    static int (*next)(const sigset_t *);
    if (!next) next = (int (*)(const sigset_t *))dlsym(RTLD_NEXT, "sigsuspend");
    sigset_t copy = *mask;
    return next(&copy);
}
