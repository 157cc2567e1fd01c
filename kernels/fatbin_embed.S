/* fatbin_embed.S — the CUDA kernels' fatbin as bytes in the binary (kernels/fatbin.h).
 * TM_FATBIN_PATH is the fatbin nvcc built; without it (no nvcc) the size is 0. */
    .section .rodata.tm_kernels_fatbin, "a"
    .balign 64
    .globl tm_kernels_fatbin
    .type tm_kernels_fatbin, @object
tm_kernels_fatbin:
#ifdef TM_FATBIN_PATH
    .incbin TM_FATBIN_PATH
#endif
tm_kernels_fatbin_end:
    .byte 0
    .size tm_kernels_fatbin, . - tm_kernels_fatbin

    .balign 8
    .globl tm_kernels_fatbin_size
    .type tm_kernels_fatbin_size, @object
tm_kernels_fatbin_size:
    .quad tm_kernels_fatbin_end - tm_kernels_fatbin
    .size tm_kernels_fatbin_size, 8

    .section .note.GNU-stack, "", @progbits
