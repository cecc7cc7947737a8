package io.ivcuda.common;

/** What serves a VM's CUDA calls in its cuda-server (the server's {@code backend} key). */
public enum Backend {
    /** The GPU through NVIDIA's driver (libcuda.so.1, JNA). */
    CUDA("cuda"),
    /** Host memory standing in for device memory: transport tests without a GPU only; it never pretends to be a GPU. */
    HOST_MEMORY("host-memory");

    private final String word;

    Backend(String word) {
        this.word = word;
    }

    /** The word of the {@code backend} key and the server's status file. */
    public String word() {
        return word;
    }
}
