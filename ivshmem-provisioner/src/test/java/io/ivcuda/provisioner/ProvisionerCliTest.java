package io.ivcuda.provisioner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
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
        assertTrue(out.toString().contains("DOMAIN  ") && out.toString().contains("LAST ERROR"), "headers: " + out);
        assertTrue(line("big").contains("REFUSED") && line("big").contains("does not fit on GPU 0")
                && line("big").contains("not provisioned"), out.toString());
        assertTrue(line("small").matches("small\\s+shut off\\s+pending: add\\s.*"), out.toString());

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
        assertTrue(line("clone").contains("FOREIGN DEVICE") && line("clone").contains("carries another domain's ivcuda device ivcuda-"
                + originalUuid + " (the device of domain 'original')"), out.toString());
        assertEquals(0, run(concat(common, "reconcile")), err.toString());
        assertTrue(out.toString().contains("clone: untagged; removed another domain's ivcuda device ivcuda-" + originalUuid), out.toString());
        out.getBuffer().setLength(0);
        assertEquals(0, run(concat(common, "status")), out.toString());
        assertTrue(out.toString().contains("no domain is tagged"), out.toString());
        out.getBuffer().setLength(0);
        assertEquals(0, run(concat(common, "status", "--all")), out.toString());
        assertTrue(line("clone").matches("clone\\s+shut off\\s+untagged\\s.*"), out.toString());
    }

    @Test
    void statusJsonDescribesEveryTaggedDomain() throws Exception {
        Path config = dir.resolve("ivcuda.properties");
        Files.writeString(config, "");
        Connect c = new Connect("test:///default");
        held = c;
        c.domainDefineXML(ReconcilerTest.domainXml("tagged", "00000000-0000-0000-0000-0000000000a1", ReconcilerTest.gpu("size='64M'"))).free();
        String[] common = {"--config", config.toString(), "--connect", "test:///default"};
        assertEquals(0, run(concat(common, "provision", "tagged")), err.toString());
        out.getBuffer().setLength(0);
        assertEquals(0, run(concat(common, "status", "--json")), err.toString());
        var report = com.google.gson.JsonParser.parseString(out.toString()).getAsJsonObject();
        assertTrue(report.getAsJsonObject("host").has("hook"), out.toString());
        var domains = report.getAsJsonArray("domains");
        assertEquals(1, domains.size(), out.toString());
        var tagged = domains.get(0).getAsJsonObject();
        assertEquals("tagged", tagged.get("name").getAsString());
        assertEquals("00000000-0000-0000-0000-0000000000a1", tagged.get("uuid").getAsString());
        assertEquals("shut off", tagged.get("state").getAsString());
        assertEquals("provisioned", tagged.get("provisioning").getAsString());
        assertTrue(tagged.get("server").isJsonNull(), "a domain that does not run has no server");
    }

    @Test
    void provisionOfAnUnknownDomainFails() {
        assertEquals(1, run("--connect", "test:///default", "provision", "nosuch"));
        assertTrue(err.toString().contains("nosuch: not_found — no domain of this name at test:///default"), err.toString());
        assertEquals("", out.toString(), "said once, on stderr");
    }

    /** Every subcommand of the picocli model, so that a new one cannot be left out (test-installed.sh lists them too). */
    @Test
    void everyCommandHasHelpAndVersion() {
        Set<String> commands = ProvisionerMain.commandLine().getSubcommands().keySet();
        assertEquals(Set.of("daemon", "status", "check", "metrics", "reconcile", "provision", "uninstall"), commands,
                "the subcommands packaging/test-installed.sh and docs/operations.md list (man page, --help, --version)");
        for (String command : commands) {
            out.getBuffer().setLength(0);
            assertEquals(0, run(command, "--help"), command + ": " + err);
            assertTrue(out.toString().contains("Usage: ivshmem-provisioner " + command + " "), out.toString());
            out.getBuffer().setLength(0);
            assertEquals(0, run(command, "--version"), command);
            assertTrue(out.toString().startsWith("ivshmem-provisioner (ivcuda) "), out.toString());
        }
        assertEquals(2, run("nosuchcommand"));
    }

    @Test
    void checkSaysWhatAnElementWouldGetOrWhatIsWrong() throws Exception {
        Path config = dir.resolve("ivcuda.properties");
        Files.writeString(config, "");
        Path good = dir.resolve("good.xml");
        Files.writeString(good, "<ivcuda:gpu xmlns:ivcuda='https://ivcuda.dev/xmlns/domain/1' size='64M' mode='doorbell'/>");
        Path bad = dir.resolve("bad.xml");
        Files.writeString(bad, "<ivcuda:gpu xmlns:ivcuda='https://ivcuda.dev/xmlns/domain/1' size='1T'/>");
        String[] common = {"--config", config.toString(), "--connect", "test:///default"};
        assertEquals(0, run(concat(common, "check", good.toString())), err.toString());
        assertTrue(out.toString().contains("good.xml: valid") && out.toString().contains("[ivcuda] GPU 0 shared, 64 MiB region, doorbell mode"),
                out.toString());
        assertEquals(1, run(concat(common, "check", bad.toString())));
        assertTrue(err.toString().contains("bad.xml: INVALID") && err.toString().contains("region size 1T is larger than 64 GiB"), err.toString());
        assertEquals(1, run(concat(common, "check", "nosuchdomain")));
        assertTrue(err.toString().contains("nosuchdomain: no such file, and no domain of this name"), err.toString());
    }

    /**
     * check DOMAIN reads the domain's persistent definition, and a FILE may hold a whole domain (as written
     * before define, without a uuid). A provisioned domain's own quota is not counted against it.
     */
    @Test
    void checkOfADefinedDomainAndOfADomainFile() throws Exception {
        Path config = dir.resolve("ivcuda.properties");
        Files.writeString(config, "gpu.0.capacity=4G\n");
        Connect c = new Connect("test:///default");
        held = c;
        c.domainDefineXML(ReconcilerTest.domainXml("placed", "00000000-0000-0000-0000-0000000000c1", ReconcilerTest.gpu("quota='3G'"))).free();
        c.domainDefineXML(ReconcilerTest.domainXml("wrong", "00000000-0000-0000-0000-0000000000c2", ReconcilerTest.gpu("size='300M'"))).free();
        String[] common = {"--config", config.toString(), "--connect", "test:///default"};
        assertEquals(0, run(concat(common, "provision", "placed")), err.toString());

        out.getBuffer().setLength(0);
        assertEquals(0, run(concat(common, "check", "placed")), err.toString());
        assertTrue(out.toString().startsWith("placed: valid — ") && out.toString().contains("quota 3 GiB"), out.toString());
        assertEquals(1, run(concat(common, "check", "wrong")));
        assertTrue(err.toString().contains("wrong: INVALID") && err.toString().contains("region size 300M is not a power of two"),
                err.toString());

        Path newDomain = dir.resolve("new-vm.xml");
        Files.writeString(newDomain, "<?xml version='1.0'?>\n<domain type='kvm'><name>new-vm</name><memory unit='MiB'>64</memory>"
                + "<metadata>" + ReconcilerTest.gpu("quota='2G'") + "</metadata><os><type>hvm</type></os><devices/></domain>");
        err.getBuffer().setLength(0);
        assertEquals(1, run(concat(common, "check", newDomain.toString())), out + "\n" + err);
        assertTrue(err.toString().contains("new-vm: REFUSED") && err.toString().contains("does not fit on GPU 0")
                && err.toString().contains("3 GiB already given"), "the other domain's quota counts: " + err);
    }

    private String line(String domain) {
        for (String l : out.toString().split("\n")) {
            if (l.startsWith(domain + " ")) {
                return l;
            }
        }
        return "(no line for " + domain + " in:\n" + out + ")";
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
