package io.ivcuda.provisioner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.libvirt.Connect;
import org.libvirt.Domain;
import picocli.CommandLine;

class ProvisionerCliTest {
    @TempDir
    Path dir;
    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    private int run(String... args) {
        CommandLine cl = ProvisionerMain.commandLine();
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        return cl.execute(args);
    }

    private Connect held;

    @AfterEach
    void clean() throws Exception {
        Connect c = new Connect("test:///default");
        if (held != null) {
            held.close();
        }
        for (Domain d : c.listAllDomains(0)) {
            if (!d.getName().equals("test")) {
                d.undefine();
            }
            d.free();
        }
        c.close();
    }

    @Test
    void statusShowsWhyADomainIsNotProvisioned() throws Exception {
        Path config = dir.resolve("ivcuda.properties");
        Files.writeString(config, "gpu.0.capacity=4G\n");
        Connect c = new Connect("test:///default");
        c.domainDefineXML(ReconcilerTest.domainXml("big", "00000000-0000-0000-0000-0000000000b1", ReconcilerTest.gpu("quota='6G'"))).free();
        c.domainDefineXML(ReconcilerTest.domainXml("small", "00000000-0000-0000-0000-0000000000b2", ReconcilerTest.gpu("quota='1G'"))).free();
        // test:///default lives as long as one connection to it is open: keep this one until the end.
        held = c;
        String[] common = {"--config", config.toString(), "--connect", "test:///default"};

        int status = run(concat(common, "status"));
        assertEquals(1, status, out + "\n" + err);
        assertTrue(out.toString().contains("big") && out.toString().contains("REFUSED")
                && out.toString().contains("does not fit on GPU 0"), out.toString());
        assertTrue(out.toString().matches("(?s).*small\\s+pending: reconcile would add.*"), out.toString());

        assertEquals(1, run(concat(common, "provision", "big")), "a refused domain fails the command");
        assertTrue(err.toString().contains("big: refused"), err.toString());
        assertEquals(0, run(concat(common, "provision", "small")));
        assertTrue(out.toString().contains("small: added"), out.toString());
    }

    @Test
    void statusReportsAnotherDomainsDeviceAndReconcileRemovesIt() throws Exception {
        Path config = dir.resolve("ivcuda.properties");
        Files.writeString(config, "");
        Connect c = new Connect("test:///default");
        held = c;
        String originalUuid = "00000000-0000-0000-0000-0000000000f1";
        c.domainDefineXML(ReconcilerTest.domainXml("original", originalUuid, null)).free();
        c.domainDefineXML(ReconcilerTest.domainXml("clone", "00000000-0000-0000-0000-0000000000f2", null)
                .replace("<devices/>", "<devices><shmem name='ivcuda-" + originalUuid + "'><model type='ivshmem-plain'/>"
                        + "<size unit='M'>4</size></shmem></devices>")).free();
        String[] common = {"--config", config.toString(), "--connect", "test:///default"};

        assertEquals(1, run(concat(common, "status")), out + "\n" + err);
        assertTrue(out.toString().matches("(?s).*clone\\s+FOREIGN DEVICE\\s+carries another domain's ivcuda device ivcuda-"
                + originalUuid + " \\(the device of domain 'original'\\).*"), out.toString());
        assertEquals(0, run(concat(common, "reconcile")), err.toString());
        assertTrue(out.toString().contains("clone: untagged; removed another domain's ivcuda device ivcuda-" + originalUuid), out.toString());
        out.getBuffer().setLength(0);
        assertEquals(0, run(concat(common, "status")), out.toString());
        assertTrue(out.toString().matches("(?s).*clone\\s+untagged.*"), out.toString());
    }

    @Test
    void unreadableConfigurationExitsTwoNamingTheFile() {
        Path missing = dir.resolve("missing.properties");
        assertEquals(2, run("--config", missing.toString(), "--connect", "test:///default", "status"));
        assertTrue(err.toString().contains(missing.toString()), err.toString());
    }

    private static String[] concat(String[] a, String... b) {
        String[] r = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }
}
