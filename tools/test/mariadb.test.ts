import { describe, expect, it } from 'vitest';
import mysql from 'mysql2/promise';
import { readTestEnv } from '@rollcall/tools/testenv';

describe('mariadb', () => {
  it('commits a transaction that another connection then reads', async () => {
    const db = readTestEnv().mariadb!;
    const options = { host: db.host, port: db.port, user: db.user, password: db.password, database: db.database };
    const writer = await mysql.createConnection(options);
    const reader = await mysql.createConnection(options);
    const table = `smoke_${process.pid}_${Date.now()}`;
    try {
      const [[version]] = (await writer.query('SELECT VERSION() AS v')) as unknown as [[{ v: string }]];
      expect(version.v).toMatch(/MariaDB/);
      await writer.query(`CREATE TABLE ${table} (id INT PRIMARY KEY, name VARCHAR(50)) ENGINE=InnoDB`);
      await writer.beginTransaction();
      await writer.query(`INSERT INTO ${table} VALUES (1, 'one')`);
      const [before] = (await reader.query(`SELECT COUNT(*) AS n FROM ${table}`)) as unknown as [[{ n: number }]];
      expect(before[0]!.n).toBe(0); // not visible before the commit
      await writer.commit();
      const [after] = (await reader.query(`SELECT name FROM ${table} WHERE id = 1`)) as unknown as [{ name: string }[]];
      expect(after[0]?.name).toBe('one');
    } finally {
      await writer.query(`DROP TABLE IF EXISTS ${table}`).catch(() => undefined);
      await writer.end();
      await reader.end();
    }
  });

  it('refuses writes by the read-only user', async () => {
    const db = readTestEnv().mariadb!;
    const admin = await mysql.createConnection({ host: db.host, port: db.port, user: db.user, password: db.password, database: db.database });
    const readOnly = await mysql.createConnection({ host: db.host, port: db.port, user: db.readOnly.user, password: db.readOnly.password, database: db.database });
    const table = `smoke_ro_${process.pid}_${Date.now()}`;
    try {
      await admin.query(`CREATE TABLE ${table} (id INT PRIMARY KEY)`);
      const [rows] = (await readOnly.query(`SELECT COUNT(*) AS n FROM ${table}`)) as unknown as [[{ n: number }]];
      expect(rows[0]!.n).toBe(0);
      await expect(readOnly.query(`INSERT INTO ${table} VALUES (1)`)).rejects.toMatchObject({ code: 'ER_TABLEACCESS_DENIED_ERROR' });
    } finally {
      await admin.query(`DROP TABLE IF EXISTS ${table}`).catch(() => undefined);
      await admin.end();
      await readOnly.end();
    }
  });
});
