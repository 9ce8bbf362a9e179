/**
 * Static checks of the distributed deployment files: docker-compose.yml and the Dockerfile.
 * They run everywhere (no Docker engine needed) and catch what `docker compose up` would only
 * show at run time: unpinned images, unknown configuration variables, missing roles or health checks.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { parse } from 'yaml';
import { configSchema, parseConfig } from '../../config/config.ts';
import { images as testImages } from '../support/containers.ts';
import { KAFKA_VERSION } from '../support/kafka-broker.ts';
import { startCommand } from '../../bin/start-command.ts';

const root = join(import.meta.dirname, '..', '..');
const composeText = readFileSync(join(root, 'docker-compose.yml'), 'utf8');
const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
const packageVersion = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;

type Service = {
  image?: string;
  build?: unknown;
  command?: string[] | string;
  environment?: Record<string, string | number | boolean | null> | string[];
  healthcheck?: { test?: string[] | string };
  depends_on?: Record<string, { condition?: string }> | string[];
  restart?: string;
  profiles?: string[];
};

const compose = parse(composeText, { merge: true }) as { services?: Record<string, Service> };
const services = compose.services ?? {};
const ROLES = ['ingest', 'projectors', 'api', 'thesis-reader'] as const;

function imageTag(image: string): string | null {
  const withoutDigest = image.split('@')[0]!;
  const lastSlash = withoutDigest.lastIndexOf('/');
  const colon = withoutDigest.indexOf(':', lastSlash + 1);
  return colon === -1 ? null : withoutDigest.slice(colon + 1);
}

function environmentOf(service: Service): Record<string, string> {
  const env = service.environment ?? {};
  const entries = Array.isArray(env)
    ? env.map((line) => {
        const at = line.indexOf('=');
        return at === -1 ? [line, ''] : [line.slice(0, at), line.slice(at + 1)];
      })
    : Object.entries(env).map(([key, value]) => [key, value === null ? '' : String(value)]);
  return Object.fromEntries(entries) as Record<string, string>;
}

/** What compose would pass when none of the interpolated host variables is set: `${X:-default}` → default. */
function interpolateDefaults(value: string): string {
  return value.replace(/\$\{[A-Z0-9_]+(?::?-([^}]*))?\}/g, (_match, fallback: string | undefined) => fallback ?? '');
}

const pulseboardServices = Object.entries(services).filter(([, service]) => service.image?.startsWith('pulseboard:'));
/** The server deployments, one compose profile each, and the stores each one's roles must wait for. */
const PROFILES = { kurrentdb: ['kurrentdb', 'mongodb', 'redis'], postgres: ['postgres', 'redis'] } as const;
const inProfile = (profile: string) => pulseboardServices.filter(([, service]) => service.profiles?.includes(profile));

describe('docker-compose.yml', () => {
  it('pins every image to an explicit version tag, never latest', () => {
    assert.ok(Object.keys(services).length > 0, 'services are defined');
    for (const [name, service] of Object.entries(services)) {
      assert.ok(service.image, `${name} names its image`);
      const tag = imageTag(service.image);
      assert.ok(tag, `${name}: ${service.image} has a tag`);
      assert.notEqual(tag.toLowerCase(), 'latest', `${name}: ${service.image}`);
      // PostgreSQL's releases have two numbers (major.minor): its full version.
      const full = service.image.startsWith('postgres:') ? /^\d+\.\d+(-[a-z0-9]+)?$/ : /^\d+\.\d+\.\d+/;
      assert.match(tag, full, `${name}: ${service.image} is pinned to a full version`);
    }
  });

  it('runs the four roles in each profile from one pulseboard image tagged with the package version', () => {
    const roleOf = (service: Service) => {
      const command = Array.isArray(service.command) ? service.command : [];
      const script = command.indexOf('bin/pulseboard.ts');
      assert.deepEqual(command.slice(0, 2), ['node', '--disable-warning=ExperimentalWarning']);
      assert.ok(
        command.slice(2, script).every((flag) => /^--[a-z-]+=\d+$/.test(flag)),
        `${command.join(' ')}: only Node flags before the script`,
      );
      assert.deepEqual(command.slice(script + 1, script + 3), ['serve', '--role']);
      return command[script + 3];
    };
    for (const [profile, stores] of Object.entries(PROFILES)) {
      const roles = inProfile(profile).map(([, service]) => roleOf(service));
      assert.deepEqual([...roles].sort(), [...ROLES].sort(), `${profile}: each role exactly once`);
      for (const [name, service] of inProfile(profile)) {
        for (const store of stores) assert.ok(store in (service.depends_on ?? {}), `${name} waits for ${store}`);
        assert.deepEqual(service.profiles, [profile], `${name} belongs to its profile alone`);
      }
    }
    assert.equal(
      pulseboardServices.length,
      Object.keys(PROFILES).length * ROLES.length,
      'every role is in exactly one profile',
    );
    // The role that serves reads runs with the memory flags `npm start` passes (docs/decisions.md, "Responses as stored bytes").
    for (const name of ['api', 'pg-api']) {
      const api = pulseboardServices.find(([service]) => service === name)![1].command as string[];
      assert.deepEqual(api.slice(2, api.indexOf('bin/pulseboard.ts')), startCommand().flags, name);
    }
    for (const [name, service] of pulseboardServices) {
      assert.equal(service.image, `pulseboard:${packageVersion}`, name);
      assert.ok(service.build, `${name} builds the image from the Dockerfile`);
    }
  });

  it('gives the pulseboard services only configuration variables the config schema knows, with valid values', () => {
    const known = new Set(Object.keys(configSchema.shape));
    for (const [name, service] of pulseboardServices) {
      const env = environmentOf(service);
      assert.ok(Object.keys(env).length > 0, `${name} is configured`);
      for (const key of Object.keys(env)) assert.ok(known.has(key), `${name}: ${key} is not a key of configSchema`);
      const resolved = Object.fromEntries(Object.entries(env).map(([key, value]) => [key, interpolateDefaults(value)]));
      const parsed = parseConfig(resolved);
      assert.ok(parsed.ok, `${name}: ${parsed.ok ? '' : parsed.reason}`);
      // The stores named in the environment are services of this file.
      for (const key of ['EVENTSTORE_URL', 'MONGODB_URL', 'POSTGRES_URL', 'REDIS_URL', 'KAFKA_BROKERS'] as const) {
        const value = resolved[key];
        if (value === undefined) continue;
        const host = /^(?:[a-z]+:\/\/)?(?:[^@/]*@)?([^:/?,]+)/.exec(value)?.[1];
        assert.ok(host && host in services, `${name}: ${key} points at ${host}, which is not a service here`);
      }
      assert.equal(resolved.HOST, '0.0.0.0', `${name} listens beyond the container's loopback`);
    }
    const withKafka = pulseboardServices
      .filter(([, service]) => 'KAFKA_BROKERS' in environmentOf(service))
      .map(([name]) => name);
    assert.deepEqual(withKafka, ['ingest', 'pg-ingest'], 'only the ingest roles consume Kafka');
  });

  it('health-checks every long-running service, the pulseboard roles on /healthz', () => {
    for (const [name, service] of Object.entries(services)) {
      if (service.restart === 'no') continue;
      const test = service.healthcheck?.test;
      assert.ok(test && test.length > 0, `${name} has a health check`);
    }
    for (const [name, service] of pulseboardServices) {
      const test = service.healthcheck?.test;
      assert.ok(Array.isArray(test) && test.join(' ').includes('/healthz'), `${name} checks /healthz`);
    }
  });

  it('starts services only after what they depend on is healthy (or, for one-shots, done)', () => {
    for (const [name, service] of Object.entries(services)) {
      const dependsOn = service.depends_on ?? {};
      assert.ok(!Array.isArray(dependsOn), `${name}: depends_on states conditions`);
      for (const [dependency, { condition }] of Object.entries(dependsOn)) {
        const target = services[dependency];
        assert.ok(target, `${name} depends on ${dependency}, which exists`);
        if (target.restart === 'no')
          assert.equal(condition, 'service_completed_successfully', `${name} → ${dependency}`);
        else {
          assert.equal(condition, 'service_healthy', `${name} → ${dependency}`);
          assert.ok(target.healthcheck, `${dependency} has the health check ${name} waits for`);
        }
      }
    }
    for (const name of ['ingest', 'pg-ingest'])
      assert.ok(
        'kafka-init' in (services[name]?.depends_on as Record<string, unknown>),
        `${name} waits for its topics`,
      );
    // A service of one profile waits only for services that run with it: its own profile's, or those of none.
    for (const [name, service] of Object.entries(services))
      for (const dependency of Object.keys(service.depends_on ?? {})) {
        const theirs = services[dependency]?.profiles;
        assert.ok(!theirs || theirs.some((p) => service.profiles?.includes(p)), `${name} → ${dependency}`);
      }
  });

  it('creates the source and dead-letter topics in a one-shot, on the tested Kafka version in KRaft mode', () => {
    const init = services['kafka-init'];
    assert.ok(init);
    const script = Array.isArray(init.command) ? init.command.join('\n') : String(init.command);
    for (const topic of ['pulseboard.projects', 'pulseboard.calls', 'pulseboard.pulse', 'pulseboard.dead-letter']) {
      assert.ok(script.includes(topic), `creates ${topic}`);
    }
    const kafka = services.kafka;
    assert.ok(kafka?.image);
    assert.equal(imageTag(kafka.image), KAFKA_VERSION, 'the broker version the real-broker tests run');
    assert.equal(environmentOf(kafka).KAFKA_PROCESS_ROLES, 'broker,controller');
  });

  it('runs MongoDB as a replica set and KurrentDB in insecure dev mode', () => {
    const mongo = services.mongodb;
    assert.ok(Array.isArray(mongo?.command) && mongo.command.includes('--replSet'));
    assert.match(environmentOf(pulseboardServices[0]![1]).MONGODB_URL ?? '', /replicaSet=rs0/);
    assert.equal(environmentOf(services.kurrentdb!).KURRENTDB_INSECURE, 'true');
  });

  it('uses the same images as the testcontainers tests', () => {
    assert.equal(services.kurrentdb?.image, testImages.kurrentdb);
    assert.equal(services.mongodb?.image, testImages.mongodb);
    assert.equal(services.kafka?.image, testImages.kafka);
  });
});

describe('Dockerfile', () => {
  const lines = dockerfile
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  const from = lines.filter((line) => /^FROM\s/i.test(line));

  it('builds on a pinned Node 24 image', () => {
    assert.equal(from.length, 1, 'one stage');
    assert.match(from[0]!, /^FROM node:24\.\d+\.\d+(-[a-z0-9.-]+)?(@sha256:[0-9a-f]{64})?$/);
  });

  it('installs production dependencies only, from the lockfile', () => {
    assert.ok(lines.some((line) => /^RUN npm ci --omit=dev\b/.test(line)));
    assert.ok(lines.some((line) => /^COPY package\.json package-lock\.json /.test(line)));
  });

  it('runs as a non-root user', () => {
    const users = lines.filter((line) => /^USER\s/i.test(line));
    assert.ok(users.length > 0, 'a USER instruction');
    const user = users[users.length - 1]!.split(/\s+/)[1]!;
    assert.ok(!['root', '0', '0:0', 'root:root'].includes(user), `runs as ${user}`);
    assert.ok(lines.lastIndexOf(users[users.length - 1]!) > lines.indexOf(from[0]!));
  });

  it('starts the service with the serve command and the Node flags of npm start', () => {
    // npm start's flags, read from package.json by bin/start-command.ts, as the read bench starts its servers, so the image cannot drift from what is measured.
    const { flags } = startCommand();
    assert.deepEqual(flags, ['--max-semi-space-size=8', '--heap-growing-percent=50']);
    assert.ok(
      lines.includes(
        `CMD ${JSON.stringify(['node', '--disable-warning=ExperimentalWarning', ...flags, 'bin/pulseboard.ts', 'serve'])}`,
      ),
    );
  });

  it('limits glibc malloc arenas for every process of the image, as npm start does (issue 12: server memory)', () => {
    assert.deepEqual(startCommand().env, { MALLOC_ARENA_MAX: '2' });
    assert.ok(lines.includes('ENV MALLOC_ARENA_MAX=2'));
  });

  it('keeps dependencies, data and tests out of the build context', () => {
    const ignored = readFileSync(join(root, '.dockerignore'), 'utf8')
      .split('\n')
      .map((line) => line.trim());
    for (const entry of ['node_modules', '.git', 'data', 'test'])
      assert.ok(ignored.includes(entry), `.dockerignore lists ${entry}`);
  });
});
