package kraftlake.jvm;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumFs;
import org.apache.hadoop.fs.DelegateToFileSystem;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FsConstants;
import org.apache.hadoop.fs.FsServerDefaults;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.local.LocalConfigKeys;
import org.apache.hadoop.fs.permission.FsAction;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system (file://) without a process per call.
 *
 * <p>Without Hadoop's native library (libhadoop, which no Maven artifact carries), its
 * RawLocalFileSystem runs a shell command for two calls every write makes: `chmod` for the
 * permission of each file it creates (the file and its .crc), and `readlink` for the link
 * status each rename asks (Delta's commit files, their checksums, a stream's offsets and
 * commits: each one a temporary file renamed). A Delta commit on a local lake started some
 * twenty such processes, 4-5 ms each from a large JVM, most of the time the commit took.
 *
 * <p>Here the same two calls go through java.nio instead, with the same effect: the
 * permission is set on the file (through a symlink, as chmod does), and a path that is no
 * symbolic link gets its plain file status. Symbolic links, and permissions java.nio cannot
 * express (the sticky bit), still take Hadoop's own way. Every other call is Hadoop's.
 *
 * <p>Named by the session for `fs.file.impl` (FileSystem) and
 * `fs.AbstractFileSystem.file.impl` (FileContext, which Delta's log store and Spark's
 * checkpoint files use): see `jvm/localfs.py`.
 */
public final class LocalFiles {
  private LocalFiles() {}

  /** The raw local file system with the two calls above through java.nio. */
  public static class Raw extends RawLocalFileSystem {
    @Override
    public void setPermission(Path p, FsPermission permission) throws IOException {
      if (permission.getStickyBit()) {
        super.setPermission(p, permission);
        return;
      }
      Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
      add(set, permission.getUserAction(), PosixFilePermission.OWNER_READ,
          PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_EXECUTE);
      add(set, permission.getGroupAction(), PosixFilePermission.GROUP_READ,
          PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_EXECUTE);
      add(set, permission.getOtherAction(), PosixFilePermission.OTHERS_READ,
          PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_EXECUTE);
      Files.setPosixFilePermissions(pathToFile(p).toPath(), set);
    }

    private static void add(Set<PosixFilePermission> set, FsAction action,
                            PosixFilePermission read, PosixFilePermission write,
                            PosixFilePermission execute) {
      if (action.implies(FsAction.READ)) {
        set.add(read);
      }
      if (action.implies(FsAction.WRITE)) {
        set.add(write);
      }
      if (action.implies(FsAction.EXECUTE)) {
        set.add(execute);
      }
    }

    @Override
    public FileStatus getFileLinkStatus(Path f) throws IOException {
      if (Files.isSymbolicLink(pathToFile(f).toPath())) {
        return super.getFileLinkStatus(f);
      }
      return getFileStatus(f);
    }
  }

  /** `fs.file.impl`: LocalFileSystem (checksums) over {@link Raw}. */
  public static final class FileSystem extends LocalFileSystem {
    public FileSystem() {
      super(new Raw());
    }
  }

  /** `fs.AbstractFileSystem.file.impl`: Hadoop's LocalFs (checksums) over {@link Raw}. */
  public static final class Fs extends ChecksumFs {
    public Fs(URI uri, Configuration conf) throws IOException, URISyntaxException {
      super(new RawFs(conf));
    }
  }

  /**
   * `fs.AbstractFileSystem.file.impl` without checksum files: Hadoop's RawLocalFs, delegating
   * to {@link Raw} (with `fs.file.impl` {@link Raw}, what the test suite's sessions run).
   */
  public static final class RawFs extends DelegateToFileSystem {
    public RawFs(URI uri, Configuration conf) throws IOException, URISyntaxException {
      this(conf);
    }

    RawFs(Configuration conf) throws IOException, URISyntaxException {
      super(FsConstants.LOCAL_FS_URI, new Raw(), conf, FsConstants.LOCAL_FS_URI.getScheme(),
          false);
    }

    @Override
    public int getUriDefaultPort() {
      return -1;
    }

    @Override
    @SuppressWarnings("deprecation")
    public FsServerDefaults getServerDefaults() throws IOException {
      return LocalConfigKeys.getServerDefaults();
    }

    @Override
    public FsServerDefaults getServerDefaults(Path f) throws IOException {
      return LocalConfigKeys.getServerDefaults();
    }

    @Override
    public boolean isValidName(String src) {
      return true;  // as RawLocalFs: the operating system decides
    }
  }
}
