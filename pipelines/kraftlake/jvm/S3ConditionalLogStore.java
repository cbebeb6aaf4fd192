package kraftlake.jvm;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Iterator;

import io.delta.storage.HadoopFileSystemLogStore;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.s3a.RemoteFileChangedException;

/**
 * Delta's LogStore for an {@code s3a://} lake written by several processes at once.
 *
 * <p>Delta commits version N of a table by creating {@code _delta_log/N.json} only if no
 * other writer created it first; a writer that finds it there re-reads the log, checks the
 * winner's commit for conflicts and tries N+1. delta-storage's default for s3a
 * ({@code S3SingleDriverLogStore}) checks and creates under a lock of its own JVM only: two
 * processes (two {@code kraftlake ingest} of different clusters) can both see N free and
 * both PUT it, and the second PUT replaces the first commit without an error.
 *
 * <p>This store creates a commit file with S3's conditional PUT ({@code If-None-Match: *},
 * Hadoop's {@code fs.option.create.conditional.overwrite}, hadoop-aws 3.4.2 and later), so
 * the store itself refuses the second writer (412 Precondition Failed), in any process on
 * any host; the refusal becomes the {@code java.nio.file.FileAlreadyExistsException} Delta
 * takes for a lost race. The option is mandatory ({@code must}): a file system that cannot
 * honour it fails the commit instead of writing it unguarded.
 *
 * <p>A 412 whose object holds exactly this commit's bytes is this writer's own PUT, sent
 * again by the SDK after its answer was lost: the commit is in, and the write succeeds.
 *
 * <p>Listing is Hadoop's (S3 lists what it has written since 2020, so no cache of recent
 * writes as the default store keeps); overwrites ({@code _last_checkpoint}) are plain PUTs.
 * Built with {@link S3CheckpointFileManager}, which creates its files the same way, by
 * {@code python -m kraftlake.jvm} ({@code kraftlake/jvm/logstore.py}).
 */
public class S3ConditionalLogStore extends HadoopFileSystemLogStore {

    /** Hadoop's builder option for S3's {@code If-None-Match: *} (HADOOP-19256). */
    static final String CONDITIONAL = "fs.option.create.conditional.overwrite";

    public S3ConditionalLogStore(Configuration hadoopConf) {
        super(hadoopConf);
    }

    @Override
    public void write(Path path, Iterator<String> actions, Boolean overwrite,
                      Configuration hadoopConf) throws IOException {
        try {
            put(path.getFileSystem(hadoopConf), path, encode(actions), overwrite);
        } catch (org.apache.hadoop.fs.FileAlreadyExistsException e) {
            final java.nio.file.FileAlreadyExistsException lost =
                new java.nio.file.FileAlreadyExistsException(path.toString());
            lost.initCause(e);
            throw lost;  // what Delta takes for a lost race
        }
    }

    /**
     * One PUT of the object at `path` holding `bytes`: a plain one when it may `overwrite`,
     * else S3's conditional PUT, which creates it only if no object is there. Another
     * writer's object there is Hadoop's {@code FileAlreadyExistsException} (S3A's own check
     * before the PUT, or the store's refusal of it); an object holding exactly `bytes` is
     * this writer's own PUT, retried by the SDK, and no error.
     */
    static void put(FileSystem fs, Path path, byte[] bytes, boolean overwrite)
            throws IOException {
        if (overwrite) {
            try (FSDataOutputStream out = fs.create(path, true)) {
                out.write(bytes);
            }
            return;
        }
        try {
            try (FSDataOutputStream out = (FSDataOutputStream) fs.createFile(path)
                    .overwrite(false).recursive().must(CONDITIONAL, true).build()) {
                out.write(bytes);
            }
        } catch (RemoteFileChangedException e) {
            // the store refused the PUT (412): an object is there
            if (!holds(fs, path, bytes)) {
                final org.apache.hadoop.fs.FileAlreadyExistsException lost =
                    new org.apache.hadoop.fs.FileAlreadyExistsException(path.toString());
                lost.initCause(e);
                throw lost;
            }
        }
    }

    @Override
    public Boolean isPartialWriteVisible(Path path, Configuration hadoopConf) {
        return false;  // an S3 object appears whole or not at all
    }

    private static byte[] encode(Iterator<String> actions) {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        while (actions.hasNext()) {
            out.writeBytes((actions.next() + "\n").getBytes(StandardCharsets.UTF_8));
        }
        return out.toByteArray();
    }

    /** Whether the object at `path` holds exactly `bytes` (this writer's own commit). */
    private static boolean holds(FileSystem fs, Path path, byte[] bytes) throws IOException {
        try (InputStream in = fs.open(path)) {
            return Arrays.equals(in.readAllBytes(), bytes);
        } catch (java.io.FileNotFoundException e) {
            return false;
        }
    }
}
