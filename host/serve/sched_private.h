/* sched_private.h - the scheduler's and sessions' insides, shared by
 * sched.c (the thread that owns the device) and session.c (what a
 * connection thread calls).  One mutex, srv_sched.mu, guards every field
 * marked [mu]; fields marked [thread] belong to the scheduler thread. */
#ifndef TSR_SCHED_PRIVATE_H
#define TSR_SCHED_PRIVATE_H

#include <pthread.h>

#include "serve.h"

#define SRV_MAX_PENDING 8   /* commands a session may queue behind its turn */
#define SRV_BATCH_MAX   8   /* sequences in one decode call (tsr_seq_generate_batch) */

typedef enum srv_admit { SRV_NEW, SRV_WAITING, SRV_SLOTTED, SRV_DETACHED } srv_admit;

/* The generation in progress on a session [thread]. */
typedef enum srv_phase { SRV_PH_START, SRV_PH_PREFILL, SRV_PH_DECODE } srv_phase;

typedef struct srv_turn {
    srv_cmd    *cmd;
    srv_phase   phase;
    int        *toks;          /* (n_toks,) the text's tokens                  */
    int         n_toks, n_in;  /* tokens to append; appended so far            */
    int         generated;     /* tokens the device has sampled                */
    int         last;          /* the last generated token; -1: none           */
    int         yields;        /* in a call of greedy sequences: it ends at    *
                                * the next token when other work comes        */
    textout out;
    srv_stats   st;
    double      t_start, t_first, t_last;
    double      t_stop;        /* when a stop reached the server; 0: none      */
} srv_turn;

struct srv_session {
    srv_sched       *sched;
    uint64_t         id;
    int              persistent;
    int              refs;         /* [mu] the client's and the scheduler's     */
    srv_admit        admit;        /* [mu]                                      */
    int              gone;         /* [mu] the client hung up                   */
    int              stop_gen;     /* [mu] stop the running turn at its next token */
    double           t_stop;       /* [mu] when stop_gen was set (srv_now), s   */
    int              bye_sent;     /* [mu] shutdown: a close was posted         */
    srv_cmd         *cmds;         /* [mu] FIFO of commands not started         */
    int              n_cmds;       /* [mu]                                      */
    srv_turn        *active;       /* [mu] set and cleared by the thread        */
    srv_event       *ev_head, **ev_tail; /* [mu] events for the client          */
    pthread_cond_t   cv;           /* the client waits here for events          */
    tsr_seq         *seq;          /* [thread] NULL until the first turn        */
    struct srv_session *prev, *next;       /* [mu] the live list                */
    struct srv_session *wait_next;         /* [mu] the wait queue               */
};

struct srv_sched {
    pthread_mutex_t mu;
    pthread_cond_t  work;          /* the thread waits here                     */
    pthread_t       thread;
    tsr_device     *dev;
    tsr_model      *model;
    tsr_model_info  info;
    srv_metrics    *metrics;
    srv_sched_opts  o;
    int             slots_used;    /* [mu] sessions SLOTTED                     */
    int             queue_len;     /* [mu] sessions WAITING                     */
    srv_session    *live;          /* [mu] every admitted session               */
    srv_session    *wait_head, *wait_tail;  /* [mu] FIFO of WAITING sessions    */
    srv_session    *rr;            /* [mu] round robin resumes after this one   */
    int             closing;       /* [mu] srv_sched_close was called           */
    int             quit;          /* [mu] srv_sched_stop was called            */
    int             preempt;       /* atomic: work changed; a long generate yields */
    int             dev_lost;      /* atomic: a device call failed with
                                      TSR_ERR_DEVICE (a card, a stage's rank or
                                      its link is gone): every turn after fails */
    char            dev_lost_msg[200]; /* why, written once by the thread before
                                      dev_lost is set                           */
    uint64_t        next_id;       /* [mu]                                      */
};

/* session.c helpers for sched.c, called with mu held. */
void srv_post_locked(srv_session *ss, srv_event *e);
void srv_detach_locked(srv_sched *s, srv_session *ss);
void srv_grant_locked(srv_sched *s);
void srv_unref_locked(srv_session *ss);
/* Wake the thread, and make a running long generate yield. */
void srv_kick_locked(srv_sched *s);

#endif
