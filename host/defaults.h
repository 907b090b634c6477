/* defaults.h - the one sampling rule of the tessera program: what tessera
 * run and chat use when the command line omits -t / -s, and the server
 * when a request (HTTP or WebSocket) omits "temperature" / "seed":
 * llama.cpp's and llama-server's temperature, 0.8, and a random seed
 * (run and chat print theirs on stderr, so that -s repeats a run).
 * Documented once in README.md ("Sampling defaults") and docs/server.md. */
#ifndef TSR_HOST_DEFAULTS_H
#define TSR_HOST_DEFAULTS_H

#define TSR_DEFAULT_TEMPERATURE 0.8f

#endif
