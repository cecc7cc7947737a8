package io.ivcuda.server.handler;

import io.ivcuda.server.channel.ChannelCalls;
import io.ivcuda.server.channel.ChunkStream;
import io.ivcuda.server.core.Vm;
import io.ivcuda.server.gen.Handlers;
import io.ivcuda.wire.ChannelFlyweight;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The calls of one channel: its {@link Session} and one handler per section of the API
 * description, as its worker dispatches to them. A new section in the description is one more
 * handler class here.
 */
public final class ChannelHandlers implements ChannelCalls {
    private final Session session;
    private final Handlers handlers;

    /**
     * @param channel   the channel's bytes (its owner_pid names the process in log lines)
     * @param reclaimer what frees the process at its ivc_process_exit
     */
    public ChannelHandlers(Vm vm, int index, long token, UnsafeBuffer channel, ChunkStream chunks, Reclaimer reclaimer) {
        session = new Session(vm, index, token, new ChannelFlyweight().wrap(channel, 0), chunks, reclaimer);
        LaunchHandler launch = new LaunchHandler(session);
        handlers = new Handlers(session, new SessionHandler(session), new DeviceHandler(session),
                new ContextHandler(session), new ModuleHandler(session), new MemoryHandler(session),
                new CopyHandler(session), new StreamHandler(session), launch,
                new ExportHandler(session), new LibraryHandler(session), new KernelLaunchHandler(session, launch),
                new ContextExtHandler(session), new LinkHandler(session), new DeviceOutputHandler(session),
                new StridedCopyHandler(session), new PoolHandler(session), new ArrayHandler(session),
                new ArrayCopyHandler(session), new TextureHandler(session), new TensorMapHandler(session),
                new StreamQueryHandler(session),
                new MemOpHandler(session), new HostFnHandler(session), new CaptureHandler(session),
                new GraphHandler(session), new GraphNodeHandler(session),
                new GraphBuildHandler(session, launch), new StagedCopyHandler(session), new ConditionalNodeHandler(session),
                new GraphMemHandler(session),
                new VmmHandler(session), new CreatedPoolHandler(session),
                new NvmlHandler(session));
    }

    @Override
    public Handlers handlers() {
        return handlers;
    }

    @Override
    public boolean greeted() {
        return session.greeted();
    }

    @Override
    public void calling(int opcode) {
        session.calling(opcode);
    }

    @Override
    public void called() {
        session.called();
    }

    @Override
    public void finished(int opcode, int result, long nanos) {
        session.finished(opcode, result, nanos);
    }

    @Override
    public boolean outputPending() {
        return session.outputPending();
    }

    @Override
    public void detach() {
        session.detach();
    }
}
