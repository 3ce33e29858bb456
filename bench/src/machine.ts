import { execFileSync } from 'node:child_process'
import os from 'node:os'
import type pg from 'pg'

/** What the bench ran on. */
export interface MachineInfo {
  cpus: number
  cpuModel: string
  memoryGiB: number
  node: string
  platform: string
  postgres: string
  postgresSettings: Record<string, string>
  git: string
}

/** Collects the machine, Node and PostgreSQL facts printed and stored with every run. */
export async function machineInfo(pool: pg.Pool): Promise<MachineInfo> {
  const { rows } = await pool.query<{ v: string }>('SELECT version() AS v')
  const settings: Record<string, string> = {}
  const names = [
    'shared_buffers',
    'synchronous_commit',
    'max_connections',
    'work_mem',
    'autovacuum_naptime',
    'autovacuum_vacuum_scale_factor',
  ]
  const s = await pool.query<{ name: string; setting: string; unit: string | null }>(
    'SELECT name, setting, unit FROM pg_settings WHERE name = ANY($1)',
    [names],
  )
  for (const r of s.rows) settings[r.name] = r.unit ? `${r.setting} ${r.unit}` : r.setting
  let git = 'unknown'
  try {
    git = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim()
    const dirty = execFileSync('git', ['status', '--porcelain'], { encoding: 'utf8' }).trim()
    if (dirty) git += ' (+ uncommitted changes)'
  } catch {}
  return {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
    postgres: rows[0]!.v.split(' on ')[0]!,
    postgresSettings: settings,
    git,
  }
}

/** The 1, 5 and 15 minute load averages, rounded. */
export function loadAverage(): [number, number, number] {
  const [a, b, c] = os.loadavg()
  return [a, b, c].map((v) => Math.round((v ?? 0) * 100) / 100) as [number, number, number]
}
