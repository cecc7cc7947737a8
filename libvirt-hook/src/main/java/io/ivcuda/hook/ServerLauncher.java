package io.ivcuda.hook;

import io.ivcuda.common.InstancePaths;

/** Starts, watches and stops one VM's cuda-server: under systemd, or directly with a pidfile. */
interface ServerLauncher {

    /** A started server the hook waits on until its header says READY. */
    interface Started {
        /** Null while the server runs, else how it ended (e.g. "exited with status 2"). */
        String exitDescription();
    }

    Started start(InstancePaths paths) throws HookException;

    boolean isRunning(InstancePaths paths);

    /** Stops the server if it runs; bounded in time; never throws. */
    void stop(InstancePaths paths);

    /** The last lines the server logged, for the user's error message. */
    String logTail(InstancePaths paths, int lines);

    /**
     * Starts the MPS control daemon if it does not run yet: a VM with a compute share is about to start
     * (docs/sharing.md). Never changes the GPU's compute mode or MIG settings. Null when it runs, else why
     * not — the hook only logs that: the server itself refuses a share MPS does not serve, or runs unshared
     * ({@code mps.unavailable}).
     */
    String ensureMpsDaemon();

    /**
     * Package removal: stops the MPS control daemon {@link #ensureMpsDaemon} started, saying so on {@code out};
     * never one it did not start. False when it still runs.
     */
    boolean stopMpsDaemon(java.io.PrintStream out);

    /** Where the server's log is, for messages. */
    String logLocation(InstancePaths paths);
}
