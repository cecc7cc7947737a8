package io.ivcuda.server.handler;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.DeviceOutput;
import io.ivcuda.server.gen.OutputCalls;
import io.ivcuda.server.gen.Reply;

/**
 * Section {@code output}: the guest reads the device output the driver printed for its process
 * (kept by {@link io.ivcuda.server.backend.StdoutCapture} in the process's {@link DeviceOutput}),
 * oldest first, at most what its buffer and the response area hold, with the counts of bytes lost
 * since its last read (docs/kernels.md).
 */
final class DeviceOutputHandler implements OutputCalls {
    private final Session session;

    DeviceOutputHandler(Session session) {
        this.session = session;
    }

    @Override
    public int ivc_device_output_read(Reply r, int capacity) {
        DeviceOutput output = session.owner().output();
        int room = r.outbufCapacity();
        int index = r.outbufIndex();
        int n = output.read((b, offset, length) -> r.buffer().putBytes(index, b, offset, length), room);
        r.outbufLength(n);
        r.set(0, output.takeDropped());
        r.set(1, output.takeWithheld());
        return CuResult.SUCCESS;
    }
}
