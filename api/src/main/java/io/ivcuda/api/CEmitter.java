package io.ivcuda.api;

import java.io.IOException;
import java.nio.file.Path;

/** Placeholder: replaced by the real emitter. */
public final class CEmitter {
    private final ApiDescription api;

    public CEmitter(ApiDescription api) {
        this.api = api;
    }

    public void write(Path dir) throws IOException {
        throw new UnsupportedOperationException("not written yet: " + api.apiVersion());
    }
}
