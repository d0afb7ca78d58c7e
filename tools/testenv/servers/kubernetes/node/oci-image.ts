import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runStep } from '../../../process/run-step.js';

/** The process of an image: what a container runs unless the pod says otherwise. */
export interface ImageConfig {
  Entrypoint?: string[];
  Cmd?: string[];
  Env?: string[];
  WorkingDir?: string;
}

export interface OciArchive {
  /** The tar of an OCI image layout, for `ctr images import`. */
  file: string;
  /** The image's reference, e.g. rollcall.test/pause:3f2a…. */
  ref: string;
}

const sha256File = (file: string) =>
  new Promise<string>((resolve, reject) => {
    const hash = createHash('sha256');
    createReadStream(file)
      .on('data', (chunk) => hash.update(chunk))
      .on('end', () => resolve(hash.digest('hex')))
      .on('error', reject);
  });

/**
 * A layer: the tar of a directory, made reproducible (sorted names, zero times, root
 * owner), so the same files give the same digest and an unchanged tree imports nothing.
 */
export async function layerTar(sourceDir: string, file: string, logFile: string): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}`;
  await runStep({
    step: `tar a layer of ${sourceDir}`,
    command: 'tar',
    args: ['--sort=name', '--mtime=@0', '--owner=0', '--group=0', '--numeric-owner', '--format=posix', '--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime', '-C', sourceDir, '-cf', tmp, '.'],
    logFile,
  });
  renameSync(tmp, file);
}

/**
 * Writes an OCI image layout (index, manifest, config, uncompressed layers) and tars it:
 * what `ctr images import` reads. The image is named by the `io.containerd.image.name`
 * annotation, so no registry is ever asked for it.
 */
export async function writeOciArchive(options: { name: string; layers: string[]; config: ImageConfig; workDir: string; logFile: string }): Promise<OciArchive> {
  const layout = join(options.workDir, 'layout');
  rmSync(layout, { recursive: true, force: true });
  const blobs = join(layout, 'blobs', 'sha256');
  mkdirSync(blobs, { recursive: true });
  const blob = (content: string) => {
    const digest = createHash('sha256').update(content).digest('hex');
    writeFileSync(join(blobs, digest), content);
    return { digest: `sha256:${digest}`, size: Buffer.byteLength(content) };
  };
  const layers = [];
  for (const tar of options.layers) {
    const digest = await sha256File(tar);
    const target = join(blobs, digest);
    // a hard link: the cached layer is not copied
    if (!existsSync(target)) await runStep({ step: 'link a layer', command: 'ln', args: [tar, target], logFile: options.logFile });
    layers.push({ mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: `sha256:${digest}`, size: statSync(tar).size });
  }
  const config = blob(JSON.stringify({
    architecture: 'amd64',
    os: 'linux',
    config: options.config,
    rootfs: { type: 'layers', diff_ids: layers.map((l) => l.digest) },
  }));
  const manifest = blob(JSON.stringify({
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config },
    layers,
  }));
  // the tag is the manifest's digest: a changed image is a new name, an unchanged one is found
  const ref = `${options.name}:${manifest.digest.slice('sha256:'.length, 'sha256:'.length + 16)}`;
  writeFileSync(join(layout, 'index.json'), JSON.stringify({
    schemaVersion: 2,
    manifests: [{
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      ...manifest,
      annotations: { 'io.containerd.image.name': ref, 'org.opencontainers.image.ref.name': ref.split(':')[1] },
    }],
  }));
  writeFileSync(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  const file = join(options.workDir, 'image.tar');
  await runStep({ step: `tar the image layout of ${options.name}`, command: 'tar', args: ['-C', layout, '-cf', file, '.'], logFile: options.logFile });
  return { file, ref };
}
