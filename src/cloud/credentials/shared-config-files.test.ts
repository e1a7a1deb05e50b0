import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseIniSections, profileFromFiles, sharedFilePaths } from './shared-config-files.ts';

test('sections, key = value lines, comments and nested blocks are read as the SDKs read them', () => {
  const sections = parseIniSections(
    [
      '# a comment',
      '[default]',
      'aws_access_key_id=AKID1   ; trailing comment',
      'Region = us-east-2',
      's3 =',
      '  max_concurrent_requests = 20',
      'output = json',
      '; another comment',
      '[  profile   team  ]',
      'role_arn = arn:aws:iam::1:role/x',
      'not a setting',
    ].join('\n'),
  );
  assert.deepEqual([...sections.keys()], ['default', 'profile team']);
  assert.deepEqual(Object.fromEntries(sections.get('default') ?? []), {
    aws_access_key_id: 'AKID1',
    region: 'us-east-2',
    output: 'json',
  });
  assert.deepEqual(Object.fromEntries(sections.get('profile team') ?? []), {
    role_arn: 'arn:aws:iam::1:role/x',
  });
});

test('a profile is [NAME] in the credentials file and [profile NAME] in the config file; the credentials file wins', () => {
  const files = {
    credentials: '[ops]\naws_access_key_id = FROM_CREDENTIALS\n',
    config: '[profile ops]\naws_access_key_id = FROM_CONFIG\nregion = eu-west-1\n[ops]\nregion = ignored\n',
  };
  assert.deepEqual(Object.fromEntries(profileFromFiles('ops', files) ?? []), {
    aws_access_key_id: 'FROM_CREDENTIALS',
    region: 'eu-west-1',
  });
  assert.equal(profileFromFiles('absent', files), undefined);
  assert.deepEqual(
    Object.fromEntries(
      profileFromFiles('default', { credentials: undefined, config: '[default]\nregion = x\n' }) ?? [],
    ),
    { region: 'x' },
    'the config file names the default profile [default]',
  );
});

test('the files are AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE, else under ~/.aws', () => {
  assert.deepEqual(sharedFilePaths({}, '/root'), {
    credentials: '/root/.aws/credentials',
    config: '/root/.aws/config',
  });
  assert.deepEqual(sharedFilePaths({ AWS_SHARED_CREDENTIALS_FILE: '/c', AWS_CONFIG_FILE: ' /k ' }, '/root'), {
    credentials: '/c',
    config: '/k',
  });
});
