// Runs Kafka's command-line tools (their `main` methods) one after another in one JVM.
//
// A tool started as its own process costs a JVM start: 0.8-1.3 s on an idle machine and
// about as much CPU, and the Kafka scenario asks Kafka some 150 times. This server is
// started once per Kafka version by tests/kafka/toolserver.py (as a single-file source
// program on that version's class path) and answers on a loopback socket:
//
//   request:  the main class and its arguments, separated by NUL, ended by a newline
//   response: "<exit status> <stdout bytes> <stderr bytes>\n", then those bytes
//
// What a tool prints goes to the request's own buffers; its exit (Kafka's `Exit.exit`, which
// every tool calls instead of System.exit) ends the request with that status, and nothing
// it prints after its first exit is kept, as in a process that has exited.
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

import org.apache.kafka.common.utils.Exit;

public final class ToolServer {
    /** Thrown by the exit procedure to leave the tool's main method. */
    static final class Exited extends Error {
        Exited() {
            super(null, null, false, false);
        }
    }

    /** An output stream whose target is swapped per request (System.out/err stay this). */
    static final class Switch extends OutputStream {
        volatile OutputStream target = OutputStream.nullOutputStream();

        @Override
        public void write(int b) throws java.io.IOException {
            target.write(b);
        }

        @Override
        public void write(byte[] b, int off, int len) throws java.io.IOException {
            target.write(b, off, len);
        }
    }

    static final Switch OUT = new Switch();
    static final Switch ERR = new Switch();
    static volatile Integer status;

    static void exit(int code) {
        if (status == null) {
            status = code;
            OUT.target = OutputStream.nullOutputStream();
            ERR.target = OutputStream.nullOutputStream();
        }
        throw new Exited();
    }

    public static void main(String[] args) throws Exception {
        System.setOut(new PrintStream(OUT, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(ERR, true, StandardCharsets.UTF_8));
        Exit.setExitProcedure((code, message) -> exit(code));
        Exit.setHaltProcedure((code, message) -> exit(code));
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            // the one line the launcher reads: the port to connect to
            PrintStream launcher = new PrintStream(
                new java.io.FileOutputStream(java.io.FileDescriptor.out), true,
                StandardCharsets.UTF_8);
            launcher.println(server.getLocalPort());
            try (Socket client = server.accept()) {
                serve(client);
            }
        }
        Runtime.getRuntime().halt(0);
    }

    static void serve(Socket client) throws Exception {
        BufferedReader in = new BufferedReader(
            new InputStreamReader(client.getInputStream(), StandardCharsets.UTF_8));
        OutputStream reply = client.getOutputStream();
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.split("\0", -1);
            String[] toolArgs = java.util.Arrays.copyOfRange(words, 1, words.length);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            status = null;
            OUT.target = out;
            ERR.target = err;
            try {
                Class.forName(words[0]).getMethod("main", String[].class)
                    .invoke(null, (Object) toolArgs);
            } catch (InvocationTargetException e) {
                if (!(e.getCause() instanceof Exited)) {
                    e.getCause().printStackTrace(System.err);
                    if (status == null) {
                        status = 1;
                    }
                }
            } catch (ReflectiveOperationException e) {
                e.printStackTrace(System.err);
                status = 1;
            }
            System.out.flush();
            System.err.flush();
            OUT.target = OutputStream.nullOutputStream();
            ERR.target = OutputStream.nullOutputStream();
            int code = status == null ? 0 : status;
            reply.write((code + " " + out.size() + " " + err.size() + "\n")
                .getBytes(StandardCharsets.US_ASCII));
            out.writeTo(reply);
            err.writeTo(reply);
            reply.flush();
        }
    }
}
