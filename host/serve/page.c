/* page.c - the playground page (host/serve/playground.html), built into the
 * binary: the assembler copies the file's bytes into .rodata, with a NUL
 * after them, so the server needs no files at run time.  The path is
 * relative to the top of the tree, where make runs the compiler; the
 * Makefile makes this object depend on the page. */
#include "serve.h"

__asm__(".section .rodata\n"
        ".global srv_page_html\n"
        ".type srv_page_html, @object\n"
        ".balign 16\n"
        "srv_page_html:\n"
        ".incbin \"host/serve/playground.html\"\n"
        "srv_page_html_end:\n"
        ".byte 0\n"
        ".size srv_page_html, . - srv_page_html\n"
        ".global srv_page_html_len\n"
        ".type srv_page_html_len, @object\n"
        ".balign 4\n"
        "srv_page_html_len:\n"
        ".int srv_page_html_end - srv_page_html\n"
        ".size srv_page_html_len, 4\n"
        ".previous\n");
