package kraftlake.jvm;

import java.io.ByteArrayOutputStream;
import java.io.IOException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager;
import org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager;

/**
 * Spark's {@code CheckpointFileManager} for an {@code s3a://} lake: a file written
 * "atomically" is one PUT of the whole file, not a temporary file renamed into place.
 *
 * <p>Two writers go through this interface: Structured Streaming for its checkpoint (each
 * micro-batch's offsets and commit files) and Delta for each commit's checksum file
 * ({@code _delta_log/N.crc}). Spark's default writes a temporary file and renames it, which
 * on S3 is a copy and a delete with existence checks before each: about 18 requests for a
 * file of a few hundred bytes, on every commit of every table. An S3 object appears whole or
 * not at all, so a single PUT is already atomic; this manager buffers the file and PUTs it
 * when the stream is closed ({@code cancel()} sends nothing). A file that must not replace
 * another ({@code overwriteIfPossible = false}: a micro-batch's offsets, a checksum) is
 * created with S3's conditional PUT, as the commit files are ({@link S3ConditionalLogStore}):
 * the store refuses it if the object exists, which Spark and Delta get as the
 * {@code FileAlreadyExistsException} a failed rename gave them. A refusal whose object holds
 * exactly these bytes is this writer's own PUT, retried by the SDK: the write succeeded.
 *
 * <p>Spark's own answer, {@code AbortableStreamBasedCheckpointFileManager}, is in the
 * {@code spark-hadoop-cloud} module, which is not published for this Spark version. Any
 * other file system keeps Spark's rename-based manager (this class's parent).
 * Built with the LogStore by {@code python -m kraftlake.jvm} ({@code kraftlake/jvm/logstore.py}).
 */
public class S3CheckpointFileManager extends FileContextBasedCheckpointFileManager {

    private final Configuration hadoopConf;

    public S3CheckpointFileManager(Path path, Configuration hadoopConf) {
        super(path, hadoopConf);
        this.hadoopConf = hadoopConf;
    }

    @Override
    public CheckpointFileManager.CancellableFSDataOutputStream createAtomic(
            Path path, boolean overwriteIfPossible) {
        if (!"s3a".equals(path.toUri().getScheme())) {
            return super.createAtomic(path, overwriteIfPossible);
        }
        return new OnePut(path, overwriteIfPossible, hadoopConf);
    }

    /** The file's bytes, buffered until {@code close()} PUTs them. */
    static final class OnePut extends CheckpointFileManager.CancellableFSDataOutputStream {
        private final Path path;
        private final boolean overwrite;
        private final Configuration hadoopConf;
        private boolean done;

        OnePut(Path path, boolean overwrite, Configuration hadoopConf) {
            super(new ByteArrayOutputStream());
            this.path = path;
            this.overwrite = overwrite;
            this.hadoopConf = hadoopConf;
        }

        @Override
        public void close() throws IOException {
            if (done) {
                return;
            }
            done = true;
            super.close();  // flushes into the buffer
            final byte[] bytes = ((ByteArrayOutputStream) underlyingStream()).toByteArray();
            S3ConditionalLogStore.put(path.getFileSystem(hadoopConf), path, bytes, overwrite);
        }

        @Override
        public void cancel() {
            done = true;  // nothing was sent
        }
    }
}
