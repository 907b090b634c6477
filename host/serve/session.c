/* session.c - a client's side of the scheduler: admission to a slot,
 * commands in, events out.  Every function here runs on a connection
 * thread and only takes the scheduler's mutex; none calls the library. */
#include <stdlib.h>
#include <string.h>

#include "sched_private.h"

const char *srv_reason_name(srv_reason r)
{
    switch (r) {
    case SRV_R_STOP:        return "stop";
    case SRV_R_LENGTH:      return "length";
    case SRV_R_INTERRUPTED: return "interrupted";
    case SRV_R_STEERED:     return "steered";
    case SRV_R_RESET:       return "reset";
    case SRV_R_SHUTDOWN:    return "shutdown";
    }
    return "unknown";
}

/* --------------------------------------------------------------- events --- */

srv_event *srv_event_new(srv_ev_kind k)
{
    srv_event *e = calloc(1, sizeof *e);
    if (e) {
        e->kind = k;
        e->token = -1;
    }
    return e;
}

void srv_event_free(srv_event *e)
{
    if (!e) return;
    free(e->text);
    free(e);
}

void srv_post_locked(srv_session *ss, srv_event *e)
{
    if (!e) return;
    if (ss->gone) {                /* nobody is listening any more */
        srv_event_free(e);
        return;
    }
    e->next = NULL;
    *ss->ev_tail = e;
    ss->ev_tail = &e->next;
    pthread_cond_broadcast(&ss->cv);
}

void srv_session_post(srv_session *ss, srv_event *e)
{
    pthread_mutex_lock(&ss->sched->mu);
    srv_post_locked(ss, e);
    pthread_mutex_unlock(&ss->sched->mu);
}

srv_event *srv_session_next(srv_session *ss)
{
    pthread_mutex_lock(&ss->sched->mu);
    while (!ss->ev_head && !ss->gone) pthread_cond_wait(&ss->cv, &ss->sched->mu);
    srv_event *e = ss->ev_head;
    if (e) {
        ss->ev_head = e->next;
        if (!ss->ev_head) ss->ev_tail = &ss->ev_head;
        e->next = NULL;
    }
    pthread_mutex_unlock(&ss->sched->mu);
    return e;
}

/* ------------------------------------------------------------ lifetime --- */

srv_session *srv_session_new(srv_sched *s, int persistent)
{
    srv_session *ss = calloc(1, sizeof *ss);
    if (!ss) return NULL;
    ss->sched = s;
    ss->persistent = persistent;
    ss->refs = 1;
    ss->ev_tail = &ss->ev_head;
    pthread_cond_init(&ss->cv, NULL);
    pthread_mutex_lock(&s->mu);
    ss->id = ++s->next_id;
    pthread_mutex_unlock(&s->mu);
    return ss;
}

uint64_t srv_session_id(const srv_session *ss)
{
    return ss->id;
}

void srv_unref_locked(srv_session *ss)
{
    if (--ss->refs > 0) return;
    while (ss->ev_head) {
        srv_event *e = ss->ev_head;
        ss->ev_head = e->next;
        srv_event_free(e);
    }
    while (ss->cmds) {
        srv_cmd *c = ss->cmds;
        ss->cmds = c->next;
        srv_cmd_free(c);
    }
    pthread_cond_destroy(&ss->cv);
    free(ss);
}

void srv_session_unref(srv_session *ss)
{
    if (!ss) return;
    srv_sched *s = ss->sched;
    pthread_mutex_lock(&s->mu);
    srv_unref_locked(ss);
    pthread_mutex_unlock(&s->mu);
}

void srv_kick_locked(srv_sched *s)
{
    __atomic_store_n(&s->preempt, 1, __ATOMIC_RELEASE);
    pthread_cond_signal(&s->work);
}

/* ------------------------------------------------------------ admission --- */

int srv_session_admit(srv_session *ss)
{
    srv_sched *s = ss->sched;
    int rc = SRV_ADMITTED;
    pthread_mutex_lock(&s->mu);
    if (s->closing) {
        rc = SRV_CLOSING;
    } else if (s->slots_used < s->o.slots && !s->wait_head) {
        ss->admit = SRV_SLOTTED;
        s->slots_used++;
    } else if (s->queue_len < s->o.queue) {
        ss->admit = SRV_WAITING;
        ss->wait_next = NULL;
        if (s->wait_tail) s->wait_tail->wait_next = ss;
        else s->wait_head = ss;
        s->wait_tail = ss;
        s->queue_len++;
    } else {
        rc = SRV_BUSY;
    }
    if (rc == SRV_ADMITTED) {
        ss->refs++;                              /* the scheduler's reference */
        ss->prev = NULL;
        ss->next = s->live;
        if (s->live) s->live->prev = ss;
        s->live = ss;
        if (ss->admit == SRV_SLOTTED) srv_kick_locked(s);   /* a waiting one: at its grant */
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* Slots freed: the sessions waiting longest get them. */
void srv_grant_locked(srv_sched *s)
{
    while (s->slots_used < s->o.slots && s->wait_head) {
        srv_session *ss = s->wait_head;
        s->wait_head = ss->wait_next;
        if (!s->wait_head) s->wait_tail = NULL;
        s->queue_len--;
        ss->admit = SRV_SLOTTED;
        s->slots_used++;
        srv_kick_locked(s);
    }
}

/* Take ss off the scheduler's lists and drop the scheduler's reference.
 * The thread has closed its sequence first (or it never had one). */
void srv_detach_locked(srv_sched *s, srv_session *ss)
{
    if (ss->admit == SRV_DETACHED || ss->admit == SRV_NEW) return;
    if (ss->admit == SRV_WAITING) {
        srv_session **p = &s->wait_head, *last = NULL;
        while (*p && *p != ss) { last = *p; p = &(*p)->wait_next; }
        if (*p) {
            *p = ss->wait_next;
            if (s->wait_tail == ss) s->wait_tail = last;
            s->queue_len--;
        }
    } else {
        s->slots_used--;
    }
    if (s->rr == ss) s->rr = ss->next;
    if (ss->prev) ss->prev->next = ss->next;
    else s->live = ss->next;
    if (ss->next) ss->next->prev = ss->prev;
    ss->prev = ss->next = NULL;
    ss->admit = SRV_DETACHED;
    srv_grant_locked(s);
    srv_kick_locked(s);
    srv_unref_locked(ss);
}

/* ------------------------------------------------------------- commands --- */

/* Stop the running turn at its next token; commands that would generate
 * and have not started are answered "interrupted" without running. */
static void interrupt_locked(srv_session *ss)
{
    if (ss->active && !ss->stop_gen) {
        ss->stop_gen = 1;
        ss->t_stop = srv_now();
    }
    for (srv_cmd *c = ss->cmds; c; c = c->next)
        if (c->kind != SRV_RESET) c->cancelled = 1;
}

int srv_session_submit(srv_session *ss, srv_cmd *c)
{
    srv_sched *s = ss->sched;
    pthread_mutex_lock(&s->mu);
    if (ss->gone || ss->n_cmds >= SRV_MAX_PENDING) {
        int full = !ss->gone;
        pthread_mutex_unlock(&s->mu);
        srv_cmd_free(c);
        return full ? -1 : 0;
    }
    if (c->kind != SRV_GENERATE) interrupt_locked(ss);
    c->next = NULL;
    srv_cmd **p = &ss->cmds;
    while (*p) p = &(*p)->next;
    *p = c;
    ss->n_cmds++;
    /* Work for the scheduler (a greedy batch yields to it at the next
     * pass): not while the session waits for a slot, nor a generate
     * queued behind the session's running turn. */
    if (ss->admit == SRV_SLOTTED && (c->kind != SRV_GENERATE || !ss->active))
        srv_kick_locked(s);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

void srv_session_interrupt(srv_session *ss)
{
    pthread_mutex_lock(&ss->sched->mu);
    interrupt_locked(ss);
    srv_kick_locked(ss->sched);
    pthread_mutex_unlock(&ss->sched->mu);
}

void srv_session_hangup(srv_session *ss)
{
    srv_sched *s = ss->sched;
    pthread_mutex_lock(&s->mu);
    ss->gone = 1;
    while (ss->ev_head) {
        srv_event *e = ss->ev_head;
        ss->ev_head = e->next;
        srv_event_free(e);
    }
    ss->ev_tail = &ss->ev_head;
    /* Waiting or never admitted: nothing on the device to undo.  Slotted:
     * the thread closes the sequence, at once if it is idle, else after
     * the token in flight. */
    if (ss->admit == SRV_WAITING) srv_detach_locked(s, ss);
    else if (ss->admit == SRV_SLOTTED) srv_kick_locked(s);
    pthread_cond_broadcast(&ss->cv);
    pthread_mutex_unlock(&s->mu);
}
