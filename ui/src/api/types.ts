// Resource shapes of Longhorn's REST API (longhorn-manager api/model.go):
// gdapi resources with id, type, links and the actions valid in the
// object's current state. Only the fields the UI reads are typed; the
// server may send more.

export interface Resource {
  id: string;
  type: string;
  links?: Record<string, string>;
  actions?: Record<string, string>;
}

export interface Collection<T> {
  type: "collection";
  resourceType: string;
  data: T[];
}

export interface Condition {
  type?: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export interface Instance {
  name: string;
  hostId: string;
  address: string;
  running: boolean;
  image?: string;
  currentImage?: string;
  instanceManagerName?: string;
  dataEngine?: string;
}

export interface Replica extends Instance {
  diskID: string;
  diskPath: string;
  dataPath: string;
  mode: string;
  failedAt: string;
}

export interface Controller extends Instance {
  endpoint: string;
  size: string;
  actualSize: string;
  isExpanding: boolean;
  lastExpansionError?: string;
}

export interface RebuildStatus {
  replica: string;
  fromReplica?: string;
  isRebuilding: boolean;
  progress: number;
  state: string;
  error: string;
}

export interface PurgeStatus {
  replica: string;
  isPurging: boolean;
  progress: number;
  state: string;
  error: string;
}

export interface BackupStatus {
  id?: string;
  snapshot: string;
  progress: number;
  backupURL?: string;
  error: string;
  state: string;
  replica?: string;
}

export interface RestoreStatus {
  replica: string;
  isRestoring: boolean;
  progress: number;
  error: string;
  state?: string;
}

export interface AttachmentTicket {
  attachmentID?: string;
  id?: string;
  attachmentType?: string;
  type?: string;
  nodeID: string;
  parameters?: Record<string, string>;
  satisfied?: boolean;
}

export interface VolumeAttachment extends Resource {
  name: string;
  volume: string;
  attachments: Record<string, AttachmentTicket>;
}

export interface KubernetesStatus {
  pvName?: string;
  pvStatus?: string;
  namespace?: string;
  pvcName?: string;
  workloadsStatus?: { podName: string; podStatus: string; workloadName?: string; workloadType?: string }[] | null;
}

export interface Volume extends Resource {
  name: string;
  size: string;
  frontend: string;
  disableFrontend: boolean;
  state: string;
  robustness: string;
  created: string;
  numberOfReplicas: number;
  dataLocality: string;
  accessMode: string;
  dataEngine: string;
  staleReplicaTimeout: number;
  currentNodeID: string;
  actualSize: number | string;
  ready: boolean;
  image?: string;
  currentImage?: string;
  encrypted?: boolean;
  migratable?: boolean;
  replicaAutoBalance?: string;
  snapshotDataIntegrity?: string;
  revisionCounterDisabled?: boolean;
  diskSelector?: string[];
  nodeSelector?: string[];
  backingImage?: string;
  fromBackup?: string;
  backupTargetName?: string;
  lastBackup?: string;
  lastBackupAt?: string;
  expansionRequired?: boolean;
  conditions: Record<string, Condition>;
  kubernetesStatus?: KubernetesStatus;
  replicas: Replica[];
  controllers: Controller[];
  rebuildStatus?: RebuildStatus[] | null;
  purgeStatus?: PurgeStatus[] | null;
  backupStatus?: BackupStatus[] | null;
  restoreStatus?: RestoreStatus[] | null;
  volumeAttachment?: VolumeAttachment | null;
}

export interface Snapshot extends Resource {
  name: string;
  parent: string;
  children: Record<string, boolean>;
  removed: boolean;
  usercreated: boolean;
  created: string;
  size: string;
  labels: Record<string, string>;
}

export interface Disk {
  path: string;
  diskType?: string;
  allowScheduling: boolean;
  evictionRequested: boolean;
  storageReserved: number;
  tags: string[];
  storageAvailable: number;
  storageScheduled: number;
  storageMaximum: number;
  scheduledReplica?: Record<string, number> | null;
  diskUUID?: string;
  conditions: Record<string, Condition>;
}

export interface LonghornNode extends Resource {
  name: string;
  address: string;
  allowScheduling: boolean;
  evictionRequested: boolean;
  disks: Record<string, Disk>;
  conditions: Record<string, Condition>;
  tags: string[];
  region: string;
  zone: string;
  instanceManagerCPURequest?: number;
  autoEvicting?: boolean;
}

export interface SettingDefinition {
  displayName: string;
  description: string;
  category: string;
  type: "string" | "int" | "bool" | "float" | "deprecated" | string;
  required: boolean;
  readOnly: boolean;
  default: string;
  options?: string[] | null;
  range?: { minimum?: number; maximum?: number } | null;
  dataEngineSpecific?: boolean;
}

export interface Setting extends Resource {
  name: string;
  value: string;
  applied?: boolean;
  definition: SettingDefinition;
}

export interface EngineImage extends Resource {
  name: string;
  image: string;
  default?: boolean;
  state?: string;
  refCount?: number;
  incompatible?: boolean;
  buildDate?: string;
  gitCommit?: string;
  version?: string;
  cliAPIVersion?: number;
  controllerAPIVersion?: number;
  dataFormatVersion?: number;
  nodeDeploymentMap?: Record<string, boolean> | null;
  conditions?: Condition[] | Record<string, Condition> | null;
}

export interface InstanceProcess {
  spec?: { name?: string; dataEngine?: string };
  status?: { state?: string; portStart?: number; portEnd?: number; errorMsg?: string; type?: string };
}

export interface InstanceManager extends Resource {
  name: string;
  image: string;
  nodeID: string;
  managerType: string;
  dataEngine?: string;
  currentState: string;
  ip?: string;
  instanceEngines?: Record<string, InstanceProcess> | null;
  instanceReplicas?: Record<string, InstanceProcess> | null;
}

export interface RecurringJob extends Resource {
  name: string;
  task: string;
  cron: string;
  retain: number;
  concurrency: number;
  groups: string[] | null;
  labels: Record<string, string> | null;
  parameters?: Record<string, string> | null;
}

export interface KubeEvent {
  metadata?: { name?: string; creationTimestamp?: string };
  involvedObject?: { kind?: string; name?: string; namespace?: string };
  reason?: string;
  message?: string;
  type?: string;
  count?: number;
  firstTimestamp?: string | null;
  lastTimestamp?: string | null;
  eventTime?: string | null;
  source?: { component?: string; host?: string };
}

export interface LonghornEvent extends Resource {
  event: KubeEvent;
  eventType: string;
}

export interface BackupTarget extends Resource {
  name: string;
  backupTargetURL: string;
  credentialSecret: string;
  pollInterval: string;
  available: boolean;
  message: string;
  default?: boolean;
}

export interface BackupVolume extends Resource {
  name: string;
  size: string;
  created: string;
  lastBackupName: string;
  lastBackupAt: string;
  dataStored?: string;
  messages?: Record<string, string> | null;
  backupTargetName?: string;
  volumeName?: string;
}

export interface Backup extends Resource {
  name: string;
  state: string;
  progress: number;
  error: string;
  url: string;
  snapshotName: string;
  snapshotCreated: string;
  created: string;
  size: string;
  volumeName: string;
  volumeSize: string;
  backupTargetName?: string;
}

/** The collections the UI subscribes to over /v1/ws/1s/<name>. */
export interface Collections {
  volumes: Volume;
  nodes: LonghornNode;
  settings: Setting;
  engineimages: EngineImage;
  instancemanagers: InstanceManager;
  volumeattachments: VolumeAttachment;
  recurringjobs: RecurringJob;
  events: LonghornEvent;
  backuptargets: BackupTarget;
  backupvolumes: BackupVolume;
  backups: Backup;
}

export type CollectionName = keyof Collections;
